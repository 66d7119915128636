package main

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestVersion: --version and version print the version and the commit,
// and exit 0.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(binary(t), arg).Output()
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		for _, field := range []string{`(?m)^version: \S+$`, `(?m)^commit: +\S+$`} {
			if !regexp.MustCompile(field).Match(out) {
				t.Errorf("%s printed no %s line:\n%s", arg, field, out)
			}
		}
	}
}
