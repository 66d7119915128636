package app

import (
	"io"
	"log/slog"
	"testing"
)

// TestHostStateDir: without --state-dir a libvirt host uses the system
// directory and a fake host one of its own, the same after a restart.
func TestHostStateDir(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prepared := func(runtime, credential, dir string) string {
		c := HostConfig{Runtime: runtime, Credential: credential, StateDir: dir, Logger: log}
		if err := c.Prepare(); err != nil {
			t.Fatal(err)
		}
		return c.StateDir
	}
	if got := prepared(RuntimeLibvirt, "bch_a", ""); got != DefaultHostStateDir {
		t.Errorf("libvirt: %q, want %q", got, DefaultHostStateDir)
	}
	if got := prepared(RuntimeFake, "bch_a", "/srv/x"); got != "/srv/x" {
		t.Errorf("fake with --state-dir: %q", got)
	}
	a, again, b := prepared(RuntimeFake, "bch_a", ""), prepared(RuntimeFake, "bch_a", ""), prepared(RuntimeFake, "bch_b", "")
	if a != again || a == b || a == DefaultHostStateDir {
		t.Errorf("fake hosts' dirs: %q, restarted %q, another host %q; want its own, stable", a, again, b)
	}
}
