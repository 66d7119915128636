package durable_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/better-compute/vps/internal/durable"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	for _, content := range []string{"first", "second"} {
		if err := durable.WriteFile(path, []byte(content), ".tmp"); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Fatalf("read %q, want %q", b, content)
		}
	}
	if left, _ := filepath.Glob(path + ".*.tmp"); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestWriteCancelled: a write stopped by its context leaves the file as it
// was and no temporary file.
func TestWriteCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "snap")
	if err := durable.WriteFile(path, []byte("old"), ".part"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := durable.Write(ctx, path, strings.NewReader("new"), ".part")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Write = %v, want context.Canceled", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("the file reads %q after a cancelled write, want old", b)
	}
	if left, _ := filepath.Glob(path + ".*.part"); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
