package house

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckTracked: the check make check runs refuses a tracked file over
// 1 MB and a tracked executable, and passes a tree of sources.
func TestCheckTracked(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../../scripts/check-tracked.sh")
	if err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		fails string
	}{
		{"sources", map[string][]byte{"main.go": []byte("package main\n"), "big.txt": make([]byte, 1<<20)}, ""},
		{"2 MB file", map[string][]byte{"main.go": []byte("package main\n"), "data.bin": make([]byte, 2<<20)}, "data.bin is 2097152 bytes"},
		{"binary", map[string][]byte{"better-compute": elf}, "better-compute is an executable build output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, b := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			git := func(args ...string) {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git("init", "-q")
			git("add", ".")
			out, err := exec.Command("bash", script, dir).CombinedOutput()
			switch {
			case tc.fails == "" && err != nil:
				t.Fatalf("check refused a clean tree: %v\n%s", err, out)
			case tc.fails != "" && err == nil:
				t.Fatalf("check passed; want it to refuse (%s)", tc.fails)
			case tc.fails != "" && !strings.Contains(string(out), tc.fails):
				t.Fatalf("check said %q; want it to name %q", out, tc.fails)
			}
		})
	}
}
