package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/durable"
)

// snapshotExt ends the name of a snapshot's file in the store; a partial
// one ends in partialExt.
const (
	snapshotExt = ".disk"
	partialExt  = ".partial"
)

// Snapshot copies the disk of the running or paused domain id into the
// snapshot store as the file of snap, whose size and sha256 it returns. A
// complete snapshot of that ID in the store is returned as it is; partial
// files of an interrupted one are removed and it is taken again. It takes
// Config.SnapshotDelay, which ctx cancels, leaving no partial file. An
// injected failure (FailSnapshots) fails the call before anything else.
func (h *Hypervisor) Snapshot(ctx context.Context, id, snap string) (hostproto.SnapshotResult, error) {
	disk, path, err := h.snapshotSource(id, snap)
	if err != nil {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s of %s: %w", snap, id, err)
	}
	res, err := takeSnapshot(ctx, disk, path, h.cfg.SnapshotDelay)
	if err != nil {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s of %s: %w", snap, id, err)
	}
	return res, nil
}

// snapshotSource returns what Snapshot copies and where to: the domain's
// disk (nil when snap is complete in the store already) and the path of
// snap's file.
func (h *Hypervisor) snapshotSource(id, snap string) ([]byte, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(snap, func(c *Calls) { c.Snapshot++ })
	if reason := h.failures.snapshots; reason != "" {
		return nil, "", errors.New(reason)
	}
	path, err := h.snapshotPath(snap)
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(path); err == nil {
		return nil, path, nil
	}
	d, err := h.domain("snapshot", id)
	if err != nil {
		return nil, "", err
	}
	if d.state != hostd.DomainRunning && d.state != hostd.DomainPaused {
		return nil, "", fmt.Errorf("domain is %s, not running or paused", d.state)
	}
	return slices.Clone(d.disk), path, nil
}

// takeSnapshot writes disk to path after delay, through a temporary file
// that is synced and renamed, and returns the file's size and sha256. A nil
// disk means path is complete already.
func takeSnapshot(ctx context.Context, disk []byte, path string, delay time.Duration) (hostproto.SnapshotResult, error) {
	if disk == nil {
		return fileResult(path)
	}
	if err := removePartials(path); err != nil {
		return hostproto.SnapshotResult{}, err
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return hostproto.SnapshotResult{}, context.Cause(ctx)
	case <-t.C:
	}
	if err := writeFileAtomic(path, disk); err != nil {
		return hostproto.SnapshotResult{}, err
	}
	return fileResult(path)
}

// writeFileAtomic writes data to path durably, making its directory
// first.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(path, data, partialExt)
}

// removePartials removes the partial files of path.
func removePartials(path string) error {
	partials, err := filepath.Glob(path + ".*" + partialExt)
	if err != nil {
		return err
	}
	for _, p := range partials {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// fileResult returns the size and sha256 of the file at path.
func fileResult(path string) (hostproto.SnapshotResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return hostproto.SnapshotResult{}, err
	}
	defer f.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, f)
	if err != nil {
		return hostproto.SnapshotResult{}, fmt.Errorf("read %s: %w", path, err)
	}
	return hostproto.SnapshotResult{SizeBytes: n, SHA256: hex.EncodeToString(sum.Sum(nil))}, nil
}

// PurgeSnapshot removes the file of snap, and any partial one, from the
// snapshot store. Purging a snapshot the store does not have succeeds.
func (h *Hypervisor) PurgeSnapshot(ctx context.Context, snap string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(snap, func(c *Calls) { c.PurgeSnapshot++ })
	path, err := h.snapshotPath(snap)
	if err == nil {
		err = removePartials(path)
	}
	if err == nil {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("purge snapshot %s: %w", snap, err)
	}
	return nil
}

// SnapshotPath returns where the file of snapshot snap is, or would be, in
// the snapshot store.
func (h *Hypervisor) SnapshotPath(snap string) (string, error) {
	return h.snapshotPath(snap)
}

// snapshotPath is the path of snap's file; snap must be a snapshot ID, so
// that it names a file of the store and nothing else.
func (h *Hypervisor) snapshotPath(snap string) (string, error) {
	if h.cfg.SnapshotDir == "" {
		return "", errors.New("no snapshot store: the fake runtime has no state dir")
	}
	if k, _, ok := ids.Parse(snap); !ok || k != ids.SandboxSnapshot {
		return "", fmt.Errorf("%q is not a snapshot ID", snap)
	}
	return filepath.Join(h.cfg.SnapshotDir, snap+snapshotExt), nil
}

// initialDisk is the disk content of a new domain of spec: its snapshot's,
// when it restores one, else a line naming its image. A snapshot missing
// from the store makes the instance invalid.
func (h *Hypervisor) initialDisk(spec hostproto.InstanceSpec) ([]byte, error) {
	if spec.RestoreFrom == "" {
		return fmt.Appendf(nil, "image %s sha256 %s\n", spec.Image.URL, spec.Image.SHA256), nil
	}
	path, err := h.snapshotPath(spec.RestoreFrom)
	if err != nil {
		return nil, fmt.Errorf("%w: restore from %s: %w", hostd.ErrInvalid, spec.RestoreFrom, err)
	}
	disk, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: snapshot %s is not on this host", hostd.ErrInvalid, spec.RestoreFrom)
	}
	if err != nil {
		return nil, fmt.Errorf("restore from %s: %w", spec.RestoreFrom, err)
	}
	return disk, nil
}

// WriteDisk appends data to the disk of domain id, as its guest writing a
// file would.
func (h *Hypervisor) WriteDisk(id string, data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.domain("write disk", id)
	if err != nil {
		return err
	}
	d.disk = append(d.disk, data...)
	return nil
}
