package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// shBlocks returns the ```sh blocks of a Markdown document, in order.
func shBlocks(doc string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```$").FindAllStringSubmatch(doc, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestREADME runs the README's shell blocks, as written, one after the
// other in one bash, against `better-compute dev --sim 2`: the block of
// the two commands stands for what the test does itself (dev runs; this is
// make test). Only what a machine's choice of ports and directories
// changes is rewritten: dev's address for 127.0.0.1:8080, the test's
// directories for .dev and /tmp. Any command failing fails the test.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := shBlocks(string(readme))
	if len(blocks) < 4 || !strings.HasPrefix(blocks[0], "make dev") {
		t.Fatalf("the README's first shell block is not the two commands: %d blocks", len(blocks))
	}
	blocks = blocks[1:]

	dev := startDev(t)
	dir := t.TempDir()
	for _, sub := range []string{"bin", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(binary(t), filepath.Join(dir, "bin", "better-compute")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "bcctl"), "../cmd/bcctl").CombinedOutput(); err != nil {
		t.Fatalf("build bcctl: %v\n%s", err, out)
	}
	if err := os.Symlink(dev.stateDir, filepath.Join(dir, ".dev")); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer("127.0.0.1:8080", strings.TrimPrefix(dev.url, "http://"), "/tmp/", filepath.Join(dir, "tmp")+"/").
		Replace(strings.Join(blocks, "\n"))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	bash := exec.CommandContext(ctx, "bash", "-xc", "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n"+script)
	bash.WaitDelay = 10 * time.Second
	bash.Dir = dir
	bash.Env = append(os.Environ(), "HOME="+dir, "BC_CONFIG="+filepath.Join(dir, "bcctl.json"))
	out, err := bash.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n--- script:\n%s\n--- output:\n%s", err, script, out)
	}
	// What the walk-through ends with: web-1 of tenant acme ran on hv-1
	// and is asked to stop, as the audit trail says.
	if !strings.Contains(string(out), "web-1: ") || !strings.Contains(string(out), `"instance.stop"`) {
		t.Errorf("the walk-through did not get to its end:\n%s", out)
	}
}
