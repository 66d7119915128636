package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWithoutAPI: what bcctl answers before it calls anything — shell
// completion scripts, a command line that does not parse, and a command
// with no context to call — with its exit code and, for a failure, one
// line on stderr.
func TestRunWithoutAPI(t *testing.T) {
	t.Parallel()
	env := map[string]string{"BC_CONFIG": filepath.Join(t.TempDir(), "config.json")}
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // a part of it
	}{
		{[]string{"completion", "bash"}, ExitOK, "bash completion"},
		{[]string{"completion", "zsh"}, ExitOK, "compdef"},
		{[]string{"completion", "fish"}, ExitOK, "complete -c bcctl"},
		{[]string{"frobnicate"}, ExitUsage, ""},
		{[]string{"instance", "get"}, ExitUsage, ""},
		{[]string{"instance", "list", "--limit", "many"}, ExitUsage, ""},
		{[]string{"instance", "list"}, ExitAuth, ""},
		{[]string{"context", "use", "nowhere"}, ExitAuth, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr, func(k string) string { return env[k] })
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) {
				t.Fatalf("exit %d (want %d), stdout %.80q", code, tc.code, stdout.String())
			}
			if code != ExitOK && (!strings.HasPrefix(stderr.String(), "bcctl: ") || strings.Count(stderr.String(), "\n") != 1) {
				t.Fatalf("stderr %q: want one line", stderr.String())
			}
		})
	}
}
