package app

import (
	"flag"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/better-compute/vps/internal/conf"
)

// settings is a process's configuration, as cmd/better-compute uses it.
type settings interface {
	Env() []conf.Var
	Flags(*flag.FlagSet)
}

// TestDefaultsShownAreApplied: the defaults --help shows, of environment
// variables and flags, read back into a configuration, are what its
// applyDefaults sets, so help cannot drift from behaviour.
func TestDefaultsShownAreApplied(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name          string
		shown, zero   settings
		applyDefaults func(settings)
	}{
		{"serve", &Config{Logger: log}, &Config{Logger: log}, func(s settings) { s.(*Config).applyDefaults() }},
		{"reconcile", &ReconcilerConfig{Logger: log}, &ReconcilerConfig{Logger: log}, func(s settings) { s.(*ReconcilerConfig).applyDefaults() }},
		{"host", &HostConfig{Logger: log}, &HostConfig{Logger: log}, func(s settings) { s.(*HostConfig).applyDefaults() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.shown.Flags(fs)
			var args []string
			fs.VisitAll(func(f *flag.Flag) { args = append(args, "--"+f.Name+"="+f.DefValue) })
			if err := fs.Parse(args); err != nil {
				t.Fatalf("a flag's default does not parse: %v", err)
			}
			var defaulted []conf.Var
			for _, v := range c.shown.Env() {
				if v.Default != "" {
					defaulted = append(defaulted, v)
				}
			}
			lookup := func(name string) (string, bool) {
				for _, v := range defaulted {
					if v.Name == name {
						return v.Default, true
					}
				}
				return "", false
			}
			if err := conf.Read(defaulted, lookup); err != nil {
				t.Fatalf("a variable's default does not parse: %v", err)
			}
			c.applyDefaults(c.zero)
			if !reflect.DeepEqual(c.shown, c.zero) {
				t.Fatalf("the defaults shown give\n%+v\napplyDefaults gives\n%+v", c.shown, c.zero)
			}
		})
	}
}

// TestEnvRefuses: a malformed value stops a process's configuration with
// an error naming the variable.
func TestEnvRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg        settings
		name, val  string
		wantInText string
	}{
		{&Config{}, "BC_LIVE_BUFFER", "abc", `BC_LIVE_BUFFER: "abc" is not a whole number`},
		{&Config{}, "BC_LIVE_BUFFER", "0", `BC_LIVE_BUFFER: "0" is not positive`},
		{&Config{}, "BC_LIVE_MAX_UNREAD", "1MiB", `BC_LIVE_MAX_UNREAD: "1MiB" is not a whole number`},
		{&Config{}, "BC_WS_MAX_CONNECTIONS", "-1", `BC_WS_MAX_CONNECTIONS: "-1" is not positive`},
		{&Config{}, "BC_HOST_SILENT_AFTER", "5", `BC_HOST_SILENT_AFTER: "5" has no unit`},
		{&Config{}, "BC_GRAPHQL_MAX_BODY", "1MiB", `BC_GRAPHQL_MAX_BODY: "1MiB" is not a whole number`},
		{&Config{}, "BC_GRAPHQL_DOCUMENT_TIMEOUT", "1", `BC_GRAPHQL_DOCUMENT_TIMEOUT: "1" has no unit`},
		{&Config{}, "BC_PROVIDERS", "hetzner,aws", `BC_PROVIDERS: "aws" is not a provider kind`},
		{&ReconcilerConfig{}, "BC_HOST_SILENT_AFTER", "0s", `BC_HOST_SILENT_AFTER: "0s" is not positive`},
	} {
		env := map[string]string{"DATABASE_URL": "postgres://db", "REDIS_URL": "redis://redis", "BC_SECRET": "s", c.name: c.val}
		err := conf.Read(c.cfg.Env(), func(name string) (string, bool) { v, ok := env[name]; return v, ok })
		if err == nil || !strings.Contains(err.Error(), c.wantInText) {
			t.Errorf("%T with %s=%s: %v; want %q", c.cfg, c.name, c.val, err, c.wantInText)
		}
	}
}

// TestDevMakesWhatServeRequires: dev reads serve's variables but requires
// none of them.
func TestDevMakesWhatServeRequires(t *testing.T) {
	var serve Config
	var dev DevConfig
	serveVars, devVars := serve.Env(), dev.Env()
	if len(serveVars) != len(devVars) {
		t.Fatalf("dev reads %d variables, serve %d", len(devVars), len(serveVars))
	}
	for i, v := range devVars {
		if v.Name != serveVars[i].Name || v.Required {
			t.Errorf("dev's %s (required %v), serve's %s", v.Name, v.Required, serveVars[i].Name)
		}
	}
	if err := conf.Read(devVars, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatalf("dev with nothing set: %v", err)
	}
}
