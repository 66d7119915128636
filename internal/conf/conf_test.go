package conf

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

type config struct {
	Name    string
	Buffer  int
	Silent  time.Duration
	Origins []string
	Private bool
}

func (c *config) env() []Var {
	return []Var{
		String(&c.Name, "NAME", "", "a name"),
		Int(&c.Buffer, "BUFFER", 256, "a buffer"),
		Duration(&c.Silent, "SILENT", 30*time.Second, "a silence"),
		List(&c.Origins, "ORIGINS", nil, "origins"),
		Bool(&c.Private, "PRIVATE", false, "a switch"),
	}
}

func lookup(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }
}

func TestRead(t *testing.T) {
	var c config
	err := Read(c.env(), lookup(map[string]string{"NAME": "n", "BUFFER": "5", "SILENT": "2m", "ORIGINS": " a, ,b ", "PRIVATE": "true"}))
	want := config{Name: "n", Buffer: 5, Silent: 2 * time.Minute, Origins: []string{"a", "b"}, Private: true}
	if err != nil || c.Name != want.Name || c.Buffer != want.Buffer || c.Silent != want.Silent || !slices.Equal(c.Origins, want.Origins) || c.Private != want.Private {
		t.Fatalf("Read = %+v, %v; want %+v", c, err, want)
	}

	c = config{Buffer: 7}
	if err := Read(c.env(), lookup(map[string]string{"BUFFER": ""})); err != nil || c.Buffer != 7 {
		t.Fatalf("an empty variable: Buffer = %d, %v; want it left alone", c.Buffer, err)
	}
}

// TestReadRefuses: every malformed value is reported, each naming its
// variable and saying what is wrong.
func TestReadRefuses(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        []string
	}{
		{"BUFFER", "abc", []string{"BUFFER", `"abc" is not a whole number`}},
		{"BUFFER", "0", []string{"BUFFER", "not positive"}},
		{"BUFFER", "-3", []string{"BUFFER", "not positive"}},
		{"BUFFER", "99999999999999999999", []string{"BUFFER", "too large"}},
		{"SILENT", "5", []string{"SILENT", `"5" has no unit`, "5s"}},
		{"SILENT", "soon", []string{"SILENT", `"soon" is not a duration`}},
		{"SILENT", "-1s", []string{"SILENT", "not positive"}},
		{"SILENT", "0s", []string{"SILENT", "not positive"}},
		{"PRIVATE", "yes", []string{"PRIVATE", `"yes" is not true or false`}},
	} {
		var cfg config
		err := Read(cfg.env(), lookup(map[string]string{c.name: c.value}))
		if err == nil {
			t.Errorf("%s=%s: no error", c.name, c.value)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s=%s: %q does not say %q", c.name, c.value, err, w)
			}
		}
	}

	var cfg config
	err := Read(cfg.env(), lookup(map[string]string{"BUFFER": "x", "SILENT": "y"}))
	if err == nil || !strings.Contains(err.Error(), "BUFFER") || !strings.Contains(err.Error(), "SILENT") {
		t.Fatalf("two malformed values: %v; want both named", err)
	}
}

func TestRequired(t *testing.T) {
	var name string
	v := String(&name, "NAME", "", "the name of the thing")
	v.Required = true
	err := Read([]Var{v}, lookup(nil))
	if err == nil || err.Error() != "NAME is not set (the name of the thing)" {
		t.Fatalf("Read without a required variable: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	var c config
	got := map[string]string{}
	for _, v := range c.env() {
		got[v.Name] = v.Default
	}
	want := map[string]string{"NAME": "", "BUFFER": "256", "SILENT": "30s", "ORIGINS": ""}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s default shown as %q, want %q", name, got[name], w)
		}
	}
}

func TestFlags(t *testing.T) {
	newFlags := func() (*flag.FlagSet, *int, *time.Duration) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var n int
		var d time.Duration
		IntFlag(fs, &n, "workers", 8, "workers")
		DurationFlag(fs, &d, "interval", 10*time.Second, "interval")
		return fs, &n, &d
	}
	fs, n, d := newFlags()
	if err := fs.Parse(nil); err != nil || *n != 8 || *d != 10*time.Second {
		t.Fatalf("defaults: %d, %v, %v", *n, *d, err)
	}
	if def := fs.Lookup("interval").DefValue; def != "10s" {
		t.Fatalf("interval's default shows as %q", def)
	}
	if err := fs.Parse([]string{"--workers", "3", "--interval", "1m"}); err != nil || *n != 3 || *d != time.Minute {
		t.Fatalf("set: %d, %v, %v", *n, *d, err)
	}
	for _, args := range [][]string{{"--workers", "0"}, {"--workers", "x"}, {"--interval", "5"}, {"--interval", "-1s"}} {
		fs, _, _ := newFlags()
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
