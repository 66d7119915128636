package fake_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// newSnapshotter returns a hypervisor with a state dir, holding domain
// "ins_a" running.
func newSnapshotter(t *testing.T, cfg fake.Config) *fake.Hypervisor {
	t.Helper()
	cfg.StateDir = t.TempDir()
	h := fake.New(cfg)
	t.Cleanup(h.Close)
	ctx := context.Background()
	if err := h.Define(ctx, spec("ins_a")); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx, "ins_a"); err != nil {
		t.Fatal(err)
	}
	return h
}

func newSnapshotID() string { return ids.Encode(ids.SandboxSnapshot, ids.New()) }

// storeFile returns the content of snap's file, or nil when it is absent,
// and fails the test on any partial file left beside it.
func storeFile(t *testing.T, h *fake.Hypervisor, snap string) []byte {
	t.Helper()
	path, err := h.SnapshotPath(snap)
	if err != nil {
		t.Fatal(err)
	}
	if partials, _ := filepath.Glob(path + ".*"); len(partials) > 0 {
		t.Errorf("partial files left: %v", partials)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func resultOf(b []byte) hostproto.SnapshotResult {
	sum := sha256.Sum256(b)
	return hostproto.SnapshotResult{SizeBytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
}

// TestSnapshotAndRestore: a snapshot carries what the guest wrote, and a
// domain restored from it starts with that disk.
func TestSnapshotAndRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newSnapshotter(t, fake.Config{})
	if err := h.WriteDisk("ins_a", []byte("/root/deps installed\n")); err != nil {
		t.Fatal(err)
	}
	disk, _ := h.Disk("ins_a")
	if !bytes.HasPrefix(disk, []byte("image https://images.example/debian-12.qcow2 sha256 abc\n")) ||
		!bytes.HasSuffix(disk, []byte("/root/deps installed\n")) {
		t.Fatalf("disk %q, want the image line then what was written", disk)
	}

	snap := newSnapshotID()
	res, err := h.Snapshot(ctx, "ins_a", snap)
	if err != nil {
		t.Fatal(err)
	}
	if want := resultOf(disk); res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if got := storeFile(t, h, snap); !bytes.Equal(got, disk) {
		t.Errorf("snapshot file %q, want the disk %q", got, disk)
	}

	t.Run("taken again returns the complete one", func(t *testing.T) {
		if err := h.WriteDisk("ins_a", []byte("later\n")); err != nil {
			t.Fatal(err)
		}
		again, err := h.Snapshot(ctx, "ins_a", snap)
		if err != nil || again != res {
			t.Errorf("second snapshot %+v, %v; want the first %+v", again, err, res)
		}
	})
	t.Run("restore", func(t *testing.T) {
		b := spec("ins_b")
		b.RestoreFrom = snap
		if err := h.Define(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got, _ := h.Disk("ins_b"); !bytes.Equal(got, disk) {
			t.Errorf("restored disk %q, want the snapshot's %q", got, disk)
		}
		if err := h.WriteDisk("ins_b", []byte("restored guest writes\n")); err != nil {
			t.Fatal(err)
		}
		if got := storeFile(t, h, snap); !bytes.Equal(got, disk) {
			t.Errorf("a restored guest's write changed the snapshot: %q", got)
		}
	})
	t.Run("purge", func(t *testing.T) {
		for range 2 { // purging an absent snapshot succeeds
			if err := h.PurgeSnapshot(ctx, snap); err != nil {
				t.Fatal(err)
			}
			if got := storeFile(t, h, snap); got != nil {
				t.Fatalf("purged snapshot still has its file: %q", got)
			}
		}
		if got := h.Calls(snap); got.Snapshot != 2 || got.PurgeSnapshot != 2 {
			t.Errorf("calls %+v, want 2 snapshots and 2 purges", got)
		}
	})
}

// TestSnapshotStates checks the snapshot row of the package documentation.
func TestSnapshotStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		from    string
		wantErr bool
	}{{"stopped", true}, {"booting", true}, {"running", false}, {"paused", false}}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			t.Parallel()
			cfg := fake.Config{StateDir: t.TempDir()}
			if tt.from == "booting" {
				cfg.BootDelay = time.Hour
			}
			h := fake.New(cfg)
			t.Cleanup(h.Close)
			if err := h.Define(ctx, spec("ins_a")); err != nil {
				t.Fatal(err)
			}
			if tt.from != "stopped" {
				if err := h.Start(ctx, "ins_a"); err != nil {
					t.Fatal(err)
				}
			}
			if tt.from == "paused" {
				if err := h.Pause(ctx, "ins_a"); err != nil {
					t.Fatal(err)
				}
			}
			snap := newSnapshotID()
			_, err := h.Snapshot(ctx, "ins_a", snap)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("snapshot of a %s domain: error %v, want error %v", tt.from, err, tt.wantErr)
			}
			if file := storeFile(t, h, snap); (file == nil) != tt.wantErr {
				t.Errorf("snapshot file %q after error %v", file, err)
			}
		})
	}
}

func TestSnapshotFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("on demand", func(t *testing.T) {
		h := newSnapshotter(t, fake.Config{})
		h.FailSnapshots("disk on fire")
		snap := newSnapshotID()
		if _, err := h.Snapshot(ctx, "ins_a", snap); err == nil || !strings.Contains(err.Error(), "disk on fire") {
			t.Fatalf("error %v, want the injected reason", err)
		}
		if storeFile(t, h, snap) != nil {
			t.Error("a failed snapshot left its file")
		}
		h.ClearFailures()
		if _, err := h.Snapshot(ctx, "ins_a", snap); err != nil {
			t.Errorf("after ClearFailures: %v", err)
		}
	})
	t.Run("slow, cancelled", func(t *testing.T) {
		h := newSnapshotter(t, fake.Config{SnapshotDelay: time.Hour})
		snap := newSnapshotID()
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := h.Snapshot(ctx, "ins_a", snap)
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want context.Canceled", err)
			}
		case <-time.After(waitFor):
			t.Fatal("a cancelled snapshot did not return")
		}
		if storeFile(t, h, snap) != nil {
			t.Error("a cancelled snapshot left its file")
		}
	})
	t.Run("slow", func(t *testing.T) {
		const delay = 50 * time.Millisecond
		h := newSnapshotter(t, fake.Config{SnapshotDelay: delay})
		began := time.Now()
		if _, err := h.Snapshot(ctx, "ins_a", newSnapshotID()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took < delay {
			t.Errorf("snapshot took %v, want at least %v", took, delay)
		}
	})
	t.Run("partial files of an interrupted one removed", func(t *testing.T) {
		h := newSnapshotter(t, fake.Config{})
		snap := newSnapshotID()
		path, _ := h.SnapshotPath(snap)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".123.partial", []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Snapshot(ctx, "ins_a", snap); err != nil {
			t.Fatal(err)
		}
		storeFile(t, h, snap)
	})
	t.Run("no domain", func(t *testing.T) {
		h := newSnapshotter(t, fake.Config{})
		if _, err := h.Snapshot(ctx, "ins_x", newSnapshotID()); !errors.Is(err, fake.ErrNoDomain) {
			t.Errorf("error %v, want ErrNoDomain", err)
		}
	})
	t.Run("not a snapshot ID", func(t *testing.T) {
		h := newSnapshotter(t, fake.Config{})
		if _, err := h.Snapshot(ctx, "ins_a", "../../etc/passwd"); err == nil {
			t.Error("a path was taken as a snapshot ID")
		}
	})
	t.Run("no store", func(t *testing.T) {
		h := fake.New(fake.Config{})
		if _, err := h.Snapshot(ctx, "ins_a", newSnapshotID()); err == nil || !strings.Contains(err.Error(), "no snapshot store") {
			t.Errorf("error %v, want no snapshot store", err)
		}
	})
}

// TestRestoreFromMissingSnapshot: the instance is invalid, not failed: no
// host would do better than the one that should hold the snapshot.
func TestRestoreFromMissingSnapshot(t *testing.T) {
	t.Parallel()
	h := newSnapshotter(t, fake.Config{})
	b := spec("ins_b")
	b.RestoreFrom = newSnapshotID()
	err := h.Define(context.Background(), b)
	if !errors.Is(err, hostd.ErrInvalid) || !strings.Contains(err.Error(), "snapshot "+b.RestoreFrom+" is not on this host") {
		t.Fatalf("error %v, want ErrInvalid saying the snapshot is not on this host", err)
	}
	if _, ok := h.Disk("ins_b"); ok {
		t.Error("a domain was defined")
	}
}
