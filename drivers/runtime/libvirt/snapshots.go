package libvirt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/durable"
)

// A snapshot is a copy of a running (or paused) domain's disk as it was at
// one instant, taken without stopping the guest: a push-mode backup job
// (virDomainBackupBegin), in which QEMU copies each block of the disk to
// the target and, until it has, copies a block the guest is about to
// overwrite before the write. The domain's disk layout never changes, so a
// snapshot leaves no chain behind and a crash in the middle leaves at most
// a backup job to abort and a partial file to remove. The copy is
// crash-consistent: a domain restored from it boots as if the source had
// lost power at that instant (what the guest had written and synced is
// there; what it held in memory is not).
//
// The store (Config.SnapshotDir) holds each snapshot as one self-contained
// qcow2 file, SNAP.qcow2, with no backing file, so a directory shared by
// hosts lets a deployment restore anywhere. A snapshot being taken is
// SNAP.qcow2.part until it is complete, fsynced and renamed.
//
// A restored domain's overlay backs onto a hard link of the snapshot in
// the state directory (a copy when the store is on another file system),
// made at Define and removed by Undefine: purging a snapshot removes its
// name from the store at once, and the file's blocks outlive it while a
// domain boots from them.

// snapshotPoll is how often a snapshot's backup job is looked at.
const snapshotPoll = 100 * time.Millisecond

// snapshot is the store's file of snapshot snap.
func (r *Runtime) snapshot(snap string) string {
	return filepath.Join(r.cfg.SnapshotDir, snap+".qcow2")
}

// restoreBase is the restored instance id's link to its snapshot.
func (r *Runtime) restoreBase(id string) string {
	return filepath.Join(r.cfg.StateDir, overlayDir, id+".snapshot.qcow2")
}

// checkSnapshotID refuses names that are not snapshot IDs, which name files.
func checkSnapshotID(snap string) error {
	if _, ok := ids.Decode(ids.SandboxSnapshot, snap); !ok {
		return fmt.Errorf("%w: %q is not a snapshot ID", hostd.ErrInvalid, snap)
	}
	return nil
}

// Snapshot implements hostd.Runtime.
func (r *Runtime) Snapshot(ctx context.Context, id, snap string) (hostproto.SnapshotResult, error) {
	if err := checkSnapshotID(snap); err != nil {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	release, err := r.claimSnapshots(ctx, id)
	if err != nil {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	defer release()
	path := r.snapshot(snap)
	if res, err := describe(path); err == nil {
		return res, nil // taken before
	} else if !os.IsNotExist(err) {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	d, err := r.must(id)
	if err != nil {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot: %w", err)
	}
	state, _, err := r.l.DomainGetState(d, 0)
	if err != nil {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if s := domainState(golibvirt.DomainState(state)); s != hostd.DomainRunning && s != hostd.DomainPaused {
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s: the domain is %s, not running or paused", id, s)
	}
	part := path + ".part"
	if err := r.backup(ctx, d, part); err != nil {
		os.Remove(part)
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s as %s: %w", id, snap, err)
	}
	res, err := seal(part, path)
	if err != nil {
		os.Remove(part)
		return hostproto.SnapshotResult{}, fmt.Errorf("snapshot %s as %s: %w", id, snap, err)
	}
	return res, nil
}

// backup copies domain d's disk to target with a backup job, and waits for
// it. A backup job left running on d (by a daemon that died, or a snapshot
// given up) is aborted first; cancelling ctx aborts this one.
func (r *Runtime) backup(ctx context.Context, d golibvirt.Domain, target string) error {
	if err := r.abortBackup(d); err != nil {
		return err
	}
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove a partial snapshot: %w", err)
	}
	desc, err := (&libvirtxml.DomainBackup{Push: &libvirtxml.DomainBackupPush{Disks: &libvirtxml.DomainBackupPushDisks{Disks: []libvirtxml.DomainBackupPushDisk{
		{Name: "vda", Backup: "yes", Driver: &libvirtxml.DomainBackupDiskDriver{Type: "qcow2"},
			Target: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: target}}},
		{Name: "sda", Backup: "no"},
	}}}}).Marshal()
	if err != nil {
		return fmt.Errorf("describe the backup: %w", err)
	}
	if err := r.l.DomainBackupBegin(d, desc, nil, 0); err != nil {
		return fmt.Errorf("begin the backup: %w", err)
	}
	if err := r.waitJob(ctx, d); err != nil {
		if aerr := r.abortBackup(d); aerr != nil {
			r.log.Warn("backup job left running", "domain", d.Name, "err", aerr)
		}
		return err
	}
	typ, params, err := r.l.DomainGetJobStats(d, golibvirt.DomainJobStatsCompleted)
	if err != nil {
		return fmt.Errorf("the backup's outcome: %w", err)
	}
	if golibvirt.DomainJobType(typ) != golibvirt.DomainJobCompleted {
		return fmt.Errorf("the backup failed: %s", jobError(params))
	}
	return nil
}

// waitJob waits until domain d runs no job, or ctx is done.
func (r *Runtime) waitJob(ctx context.Context, d golibvirt.Domain) error {
	tick := time.NewTicker(snapshotPoll)
	defer tick.Stop()
	for {
		typ, _, _, _, _, _, _, _, _, _, _, _, err := r.l.DomainGetJobInfo(d)
		if err != nil {
			return fmt.Errorf("the backup's progress: %w", err)
		}
		if golibvirt.DomainJobType(typ) == golibvirt.DomainJobNone {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// abortBackup aborts a backup job running on domain d, if there is one, and
// waits for it to end; any other job is left alone, and is an error.
func (r *Runtime) abortBackup(d golibvirt.Domain) error {
	typ, params, err := r.l.DomainGetJobStats(d, 0)
	if err != nil {
		return fmt.Errorf("the domain's jobs: %w", err)
	}
	if golibvirt.DomainJobType(typ) == golibvirt.DomainJobNone {
		return nil
	}
	if op, _ := jobParam(params, golibvirt.DomainJobOperationStr); op != int64(golibvirt.DomainJobOperationStrBackup) {
		return fmt.Errorf("the domain is busy with another job (operation %d)", op)
	}
	if err := r.l.DomainAbortJob(d); err != nil && !isNotRunning(err) {
		return fmt.Errorf("abort a backup: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return r.waitJob(ctx, d)
}

// jobParam reads a whole-number job statistic.
func jobParam(params []golibvirt.TypedParam, field string) (int64, bool) {
	for _, p := range params {
		if p.Field == field {
			return unsigned(p.Value)
		}
	}
	return 0, false
}

// jobError is what a failed job's statistics say of its failure.
func jobError(params []golibvirt.TypedParam) string {
	for _, p := range params {
		if s, ok := p.Value.I.(string); ok && p.Field == golibvirt.DomainJobErrmsg {
			return s
		}
	}
	return "no reason given"
}

// seal makes the complete copy part the snapshot at path: it hashes and
// fsyncs it, renames it, and fsyncs the directory, so a snapshot in the
// store is whole whatever crashes.
func seal(part, path string) (hostproto.SnapshotResult, error) {
	f, err := os.Open(part)
	if err != nil {
		return hostproto.SnapshotResult{}, err
	}
	defer f.Close()
	res, err := digest(f)
	if err != nil {
		return res, fmt.Errorf("read %s: %w", part, err)
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("sync %s: %w", part, err)
	}
	if err := os.Rename(part, path); err != nil {
		return res, err
	}
	return res, durable.SyncDir(filepath.Dir(path))
}

// describe is the size and sha256 of the snapshot at path.
func describe(path string) (hostproto.SnapshotResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return hostproto.SnapshotResult{}, err
	}
	defer f.Close()
	return digest(f)
}

func digest(r io.Reader) (hostproto.SnapshotResult, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return hostproto.SnapshotResult{SizeBytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

// PurgeSnapshot implements hostd.Runtime: it removes the snapshot, and a
// partial one, from the store. Domains restored from it keep booting from
// their own link to it.
func (r *Runtime) PurgeSnapshot(ctx context.Context, snap string) error {
	if err := checkSnapshotID(snap); err != nil {
		return fmt.Errorf("purge snapshot: %w", err)
	}
	path := r.snapshot(snap)
	for _, p := range []string{path, path + ".part"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("purge snapshot %s: %w", snap, err)
		}
	}
	return durable.SyncDir(r.cfg.SnapshotDir)
}

// claimSnapshots waits until no other snapshot of instance id is being
// taken by this runtime, and claims the instance until release: one backup
// job per domain, and a second Snapshot of the same ID finds the first's
// result.
func (r *Runtime) claimSnapshots(ctx context.Context, id string) (release func(), err error) {
	for {
		r.mu.Lock()
		busy, ok := r.snapping[id]
		if !ok {
			done := make(chan struct{})
			r.snapping[id] = done
			r.mu.Unlock()
			return func() {
				r.mu.Lock()
				delete(r.snapping, id)
				r.mu.Unlock()
				close(done)
			}, nil
		}
		r.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// linkSnapshot gives restored instance id its own name of snapshot snap
// (restoreBase): a hard link, or a copy when the store is on another file
// system. A missing snapshot is invalid.
func (r *Runtime) linkSnapshot(ctx context.Context, id, snap string) (string, error) {
	if err := checkSnapshotID(snap); err != nil {
		return "", err
	}
	base := r.restoreBase(id)
	if _, err := os.Stat(base); err == nil {
		return base, nil // made before a crash
	}
	src := r.snapshot(snap)
	if _, err := os.Stat(src); os.IsNotExist(err) {
		return "", fmt.Errorf("%w: snapshot %s is not in this host's store (%s)", hostd.ErrInvalid, snap, r.cfg.SnapshotDir)
	}
	err := os.Link(src, base)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: snapshot %s is not in this host's store (%s)", hostd.ErrInvalid, snap, r.cfg.SnapshotDir)
	}
	if errors.Is(err, syscall.EXDEV) {
		err = copyFile(ctx, src, base)
	}
	if err != nil {
		return "", fmt.Errorf("link snapshot %s: %w", snap, err)
	}
	return base, nil
}

// copyFile copies src to dst durably.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return durable.Write(ctx, dst, in, ".tmp")
}
