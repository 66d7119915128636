package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// runHere runs the command line args in this process, with an empty
// environment, and returns what it printed and its exit code.
func runHere(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, func(string) (string, bool) { return "", false }, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestHelp: --help, -h and help print the commands to stdout and exit 0.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		stdout, stderr, code := runHere(t, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		for _, c := range commands() {
			if !regexp.MustCompile(`(?m)^  ` + c.name + ` `).MatchString(stdout) {
				t.Errorf("%v does not list %s:\n%s", args, c.name, stdout)
			}
		}
	}
	if _, stderr, code := runHere(t); code != 2 || !strings.Contains(stderr, "usage:") {
		t.Errorf("no command: exit %d, stderr %q; want 2 and the usage", code, stderr)
	}
}

// TestCommandHelp: every command's help exits 0 and lists, with its
// default, every environment variable of the table its configuration is
// read from and every flag it defines.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			stdout, stderr, code := runHere(t, args...)
			if code != 0 || stderr != "" {
				t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
			}
			for _, v := range c.config.Env() {
				def := v.Default
				if v.Required {
					def = "required"
				}
				line := `(?m)^  ` + v.Name + ` +` + regexp.QuoteMeta(def) + ` +\S`
				if !regexp.MustCompile(line).MatchString(stdout) {
					t.Errorf("%v does not list %s with default %q:\n%s", args, v.Name, def, stdout)
				}
			}
			c.flagSet().VisitAll(func(f *flag.Flag) {
				line := `(?m)^  --` + f.Name + `( \S+)? +` + regexp.QuoteMeta(f.DefValue) + ` +\S`
				if !regexp.MustCompile(line).MatchString(stdout) {
					t.Errorf("%v does not list --%s with default %q:\n%s", args, f.Name, f.DefValue, stdout)
				}
			})
		}
	}

	// By hand, in case a table lost a row.
	for name, want := range map[string][]string{
		"serve":     {"DATABASE_URL", "REDIS_URL", "BC_SECRET", "BC_HOST_SILENT_AFTER", "BC_LIVE_BUFFER", "BC_WS_MAX_CONNECTIONS", "BC_PROVIDERS", "--listen"},
		"reconcile": {"DATABASE_URL", "BC_HOST_SILENT_AFTER", "BC_REDIS_PREFIX", "--workers", "--rescan-interval", "--orphan-grace"},
		"host":      {"BC_HOST_CREDENTIAL", "--server", "--credential-file", "--runtime", "--heartbeat"},
		"dev":       {"DATABASE_URL", "BC_LIVE_BUFFER", "--listen", "--sim", "--state-dir"},
		"token":     {"DATABASE_URL", "--name", "--tenant", "--expires"},
		"reseal":    {"DATABASE_URL", "BC_SECRET", "BC_SECRET_PREVIOUS"},
		"migrate":   {"DATABASE_URL"},
		"doctor":    {"DATABASE_URL", "REDIS_URL", "BC_SECRET", "BC_RUNTIMES", "BC_HOST_SILENT_AFTER", "--json", "--stuck-after"},
	} {
		stdout, _, _ := runHere(t, name, "--help")
		for _, w := range want {
			if !strings.Contains(stdout, "  "+w+" ") {
				t.Errorf("%s --help does not mention %s:\n%s", name, w, stdout)
			}
		}
	}
}

// TestHelpBinary: the binary's help goes to stdout and exits 0, even with
// a malformed environment.
func TestHelpBinary(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"token", "create", "--help"}} {
		cmd := exec.Command(binary(t), args...)
		cmd.Env = append(os.Environ(), "BC_LIVE_BUFFER=abc")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "usage: better-compute") || stderr.Len() > 0 {
			t.Errorf("%v: %v, stdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
		}
	}
}
