package libvirt_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/drivers/runtime/libvirt"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/testguest"
)

// guestHost is a runtime whose guests (the project's test guest) join a
// bridge with the address gw, so the test logs in to them.
type guestHost struct {
	*env
	r     *libvirt.Runtime
	image hostproto.Image
}

// The guests' network: the bridge's address and the guests' /24.
const (
	guestGateway = "10.53.0.1"
	guestNet     = "10.53.0.%d"
)

func setupGuests(t testing.TB) *guestHost {
	t.Helper()
	e := setup(t)
	url, format, sum := testguest.Image(t)
	r := e.runtime(func(c *libvirt.Config) { c.Bridge = e.bridge(guestGateway + "/24") })
	return &guestHost{env: e, r: r, image: hostproto.Image{URL: url, SHA256: sum, Format: format}}
}

// guest is the spec of a guest named name at the address ending in last
// that lets key log in.
func (g *guestHost) guest(name string, last byte, key string) hostproto.InstanceSpec {
	return hostproto.InstanceSpec{
		ID: ids.Encode(ids.Instance, ids.New()), Name: name, Power: hostproto.PowerRunning, Vcpus: 1, MemoryMB: 128, DiskGB: 1,
		Image: g.image, SSHKeys: []string{key},
		Network: &hostproto.Network{MAC: fmt.Sprintf("02:bc:0a:35:00:%02x", last), Address: fmt.Sprintf(guestNet+"/24", last), Gateway: guestGateway},
	}
}

// boot defines and starts spec's domain (undefined when the test ends),
// and returns its output of cmd once it answers SSH.
func (g *guestHost) boot(spec hostproto.InstanceSpec, signer ssh.Signer, cmd string) string {
	g.t.Helper()
	ctx := context.Background()
	g.t.Cleanup(func() { g.r.Undefine(ctx, spec.ID) })
	if err := g.r.Define(ctx, spec); err != nil {
		g.t.Fatal(err)
	}
	if err := g.r.Start(ctx, spec.ID); err != nil {
		g.t.Fatal(err)
	}
	return testguest.WaitSSH(g.t, g.console(spec.ID), address(spec), signer, cmd)
}

func (g *guestHost) console(id string) string { return filepath.Join(g.dir, "consoles", id+".log") }

func (g *guestHost) stored(snap string) string {
	return filepath.Join(g.dir, "snapshots", snap+".qcow2")
}

func address(spec hostproto.InstanceSpec) string {
	return strings.TrimSuffix(spec.Network.Address, "/24")
}

func newSnapshotID() string { return ids.Encode(ids.SandboxSnapshot, ids.New()) }

// TestSnapshotRestore, on real guests: a guest writes a file to its disk
// and syncs; a snapshot of it is taken while it runs and an SSH session to
// it stays open, and the session still answers afterwards. Taking the same
// snapshot again returns the same result, the sha256 of the stored file. A
// second guest restored from it, with its own name, address and key, finds
// the file and is itself. Purging the snapshot removes it from the store
// and the restored guest still boots from it; undefining both guests
// leaves no overlay, link, seed, console, filter or snapshot.
func TestSnapshotRestore(t *testing.T) {
	g := setupGuests(t)
	ctx := context.Background()
	signer, key := testguest.Key()
	source := g.guest("source", 10, key)
	g.boot(source, signer, "echo kept > /data/kept.txt && sync")
	session, err := testguest.Dial(address(source), signer)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	snap := newSnapshotID()
	begin := time.Now()
	res, err := g.r.Snapshot(ctx, source.ID, snap)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	if out, err := testguest.Exec(session, "cat /data/kept.txt"); err != nil || out != "kept\n" {
		t.Fatalf("the SSH session open during the snapshot: %q, %v", out, err)
	}
	want(t, g.r, source.ID, hostd.DomainRunning)

	t.Run("the result is the stored file's", func(t *testing.T) {
		b, err := os.ReadFile(g.stored(snap))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if res.SizeBytes != int64(len(b)) || res.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("Snapshot = %+v; the stored file has %d bytes, sha256 %x", res, len(b), sum)
		}
		if info := qemuInfo(t, g.stored(snap)); strings.Contains(info, "backing file") {
			t.Fatalf("the snapshot is not self-contained:\n%s", info)
		}
	})
	t.Run("taking it again returns it as it is", func(t *testing.T) {
		again, err := g.r.Snapshot(ctx, source.ID, snap)
		if err != nil || again != res {
			t.Fatalf("Snapshot again = %+v, %v; want %+v", again, err, res)
		}
	})

	restoredSigner, restoredKey := testguest.Key()
	restored := g.guest("restored", 11, restoredKey)
	restored.RestoreFrom = snap
	restored.NetworkPolicy = &hostproto.NetworkPolicy{AllowOut: []string{guestGateway}}
	const look = "cat /data/kept.txt; hostname; cat /root/.ssh/authorized_keys"
	check := func(t *testing.T, out string) {
		t.Helper()
		if want := "kept\nrestored\n" + restoredKey + "\n"; out != want {
			t.Fatalf("the restored guest says %q, want %q", out, want)
		}
	}
	check(t, g.boot(restored, restoredSigner, look))
	if info := qemuInfo(t, filepath.Join(g.dir, "overlays", restored.ID+".qcow2")); !strings.Contains(info, "backing file: "+filepath.Join(g.dir, "overlays", restored.ID+".snapshot.qcow2")) {
		t.Fatalf("the restored overlay is not over its link to the snapshot:\n%s", info)
	}
	if _, err := testguest.Run(address(restored), signer, "true"); err == nil {
		t.Error("the source's key logs in to the restored guest")
	}
	if out, err := testguest.Exec(session, "cat /data/kept.txt"); err != nil || out != "kept\n" {
		t.Fatalf("the source's session after the restore: %q, %v", out, err)
	}
	t.Logf("snapshot of the running guest: %v, %d bytes", took.Round(time.Millisecond), res.SizeBytes)

	t.Run("purged, it leaves the store and the restored guest still boots", func(t *testing.T) {
		for range 2 {
			if err := g.r.PurgeSnapshot(ctx, snap); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(g.stored(snap)); !os.IsNotExist(err) {
			t.Fatalf("the snapshot is still in the store: %v", err)
		}
		if err := g.r.Shutdown(ctx, restored.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
		want(t, g.r, restored.ID, hostd.DomainStopped)
		if err := g.r.Start(ctx, restored.ID); err != nil {
			t.Fatal(err)
		}
		check(t, testguest.WaitSSH(t, g.console(restored.ID), address(restored), restoredSigner, look))
	})
	t.Run("undefined, nothing is left", func(t *testing.T) {
		session.Close()
		for _, s := range []hostproto.InstanceSpec{source, restored} {
			if err := g.r.Undefine(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
		}
		for _, dir := range []string{"overlays", "seeds", "consoles", "snapshots"} {
			if left, _ := os.ReadDir(filepath.Join(g.dir, dir)); len(left) != 0 {
				t.Errorf("%s left: %v", dir, left)
			}
		}
		if left := filters(t, []string{source.ID, restored.ID}); len(left) != 0 {
			t.Errorf("network filters left: %v", left)
		}
	})
}

func qemuInfo(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("qemu-img", "info", "-U", path).CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-img info %s: %v %s", path, err, out)
	}
	return string(out)
}

// TestSnapshotRefusals: a domain that is not running, or none, cannot be
// snapshotted; a restore from a snapshot the store lacks is invalid and
// defines nothing; a name that is not a snapshot ID is invalid.
func TestSnapshotRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.runtime()
	ctx := context.Background()
	stopped := e.spec()
	t.Cleanup(func() { r.Undefine(ctx, stopped.ID) })
	if err := r.Define(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	missing := e.spec()
	missing.RestoreFrom = newSnapshotID()
	for _, c := range []struct {
		name    string
		do      func() error
		invalid bool
	}{
		{"a stopped domain", func() error { _, err := r.Snapshot(ctx, stopped.ID, newSnapshotID()); return err }, false},
		{"no domain", func() error { _, err := r.Snapshot(ctx, e.spec().ID, newSnapshotID()); return err }, false},
		{"not a snapshot ID", func() error { _, err := r.Snapshot(ctx, stopped.ID, "../escape"); return err }, true},
		{"a restore from a missing snapshot", func() error { return r.Define(ctx, missing) }, true},
		{"purging not a snapshot ID", func() error { return r.PurgeSnapshot(ctx, "../escape") }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if err == nil || errors.Is(err, hostd.ErrInvalid) != c.invalid {
				t.Fatalf("err = %v, want an error (invalid: %v)", err, c.invalid)
			}
		})
	}
	if err := r.PurgeSnapshot(ctx, newSnapshotID()); err != nil {
		t.Errorf("purging a snapshot the store lacks: %v", err)
	}
	if _, ok := state(t, r, missing.ID); ok {
		t.Error("the restore from a missing snapshot was defined")
	}
	if left, _ := os.ReadDir(filepath.Join(e.dir, "snapshots")); len(left) != 0 {
		t.Errorf("snapshots left: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(e.dir, "*", missing.ID+"*")); len(left) != 0 {
		t.Errorf("the restore left %v", left)
	}
}

// TestSnapshotCancelled: cancelling a snapshot while its copy runs leaves
// no file in the store and no job on the domain. Then, as after a daemon
// that died mid-snapshot, a backup job runs on the domain (begun with
// virsh, in pull mode, so it runs until aborted) and the store holds the
// snapshot's partial file: a new runtime takes the same snapshot whole, of
// the paused domain, which stays paused. The domain boots nothing; its disk
// holds 512 MiB written before it started, so a copy takes a while.
func TestSnapshotCancelled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.runtime()
	spec := e.spec()
	ctx := context.Background()
	t.Cleanup(func() { r.Undefine(ctx, spec.ID) })
	if err := r.Define(ctx, spec); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(e.dir, "overlays", spec.ID+".qcow2")
	if out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", "write -P 0xab 0 512M", overlay).CombinedOutput(); err != nil {
		t.Fatalf("qemu-io: %v %s", err, out)
	}
	if err := r.Start(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	snap := newSnapshotID()
	stored := filepath.Join(e.dir, "snapshots", snap+".qcow2")
	cctx, cancel := context.WithCancel(ctx)
	watched := make(chan bool)
	go func() { // cancel once the copy has begun
		began := testenv.Within(time.Minute, func() bool { _, err := os.Stat(stored + ".part"); return err == nil })
		cancel()
		watched <- began
	}()
	_, err := r.Snapshot(cctx, spec.ID, snap)
	if !<-watched {
		t.Fatal("the copy never began")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Snapshot = %v, want it cancelled (did the copy end before the cancellation?)", err)
	}
	if left, _ := os.ReadDir(filepath.Join(e.dir, "snapshots")); len(left) != 0 {
		t.Fatalf("the store holds %v", left)
	}
	noJob := func() {
		t.Helper()
		if info := virsh(t, "domjobinfo", "bc-"+spec.ID); !strings.Contains(info, "None") {
			t.Fatalf("a job is left on the domain:\n%s", info)
		}
	}
	noJob()

	t.Run("after a daemon died mid-snapshot", func(t *testing.T) {
		if err := r.Pause(ctx, spec.ID); err != nil {
			t.Fatal(err)
		}
		backup, sockets := filepath.Join(e.dir, "backup.xml"), filepath.Join(e.dir, "nbd")
		os.Mkdir(sockets, 0o777)
		os.Chmod(sockets, 0o777) // QEMU's user binds the export's socket there
		os.WriteFile(backup, []byte(`<domainbackup mode="pull"><server transport="unix" socket="`+filepath.Join(sockets, "export.sock")+`"/>
			<disks><disk name="vda" backup="yes" type="file"><scratch file="`+filepath.Join(e.dir, "scratch.qcow2")+`"/></disk><disk name="sda" backup="no"/></disks></domainbackup>`), 0o644)
		virsh(t, "backup-begin", "bc-"+spec.ID, backup)
		if info := virsh(t, "domjobinfo", "bc-"+spec.ID); !strings.Contains(info, "Backup") {
			t.Fatalf("no backup job runs:\n%s", info)
		}
		os.WriteFile(stored+".part", []byte("half a snapshot"), 0o644)
		res, err := e.runtime().Snapshot(ctx, spec.ID, snap)
		if err != nil {
			t.Fatalf("taking it again: %v", err)
		}
		if fi, err := os.Stat(stored); err != nil || fi.Size() != res.SizeBytes || res.SizeBytes < 512<<20 {
			t.Fatalf("taken again: %+v; stored %v, %v", res, fi, err)
		}
		if _, err := os.Stat(stored + ".part"); !os.IsNotExist(err) {
			t.Fatalf("the partial file remains: %v", err)
		}
		want(t, r, spec.ID, hostd.DomainPaused)
		noJob()
	})
}

// BenchmarkSnapshot measures, on real guests under software emulation: a
// cold guest's Define+Start to its first SSH login, a snapshot of it while
// it runs (its time and the stored file's size), and a guest restored from
// the snapshot's Define+Start to its first SSH login.
func BenchmarkSnapshot(b *testing.B) {
	g := setupGuests(b)
	ctx := context.Background()
	signer, key := testguest.Key()
	for range b.N {
		source, restored := g.guest("source", 10, key), g.guest("restored", 11, key)
		begin := time.Now()
		g.boot(source, signer, "dd if=/dev/urandom of=/data/blob bs=64k count=16 2>/dev/null && sync")
		cold := time.Since(begin)
		snap := newSnapshotID()
		begin = time.Now()
		res, err := g.r.Snapshot(ctx, source.ID, snap)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(begin)
		restored.RestoreFrom = snap
		begin = time.Now()
		if out := g.boot(restored, signer, "ls -l /data/blob"); !strings.Contains(out, " 1048576 ") {
			b.Fatalf("the restored guest: %q", out)
		}
		restore := time.Since(begin)
		for _, s := range []hostproto.InstanceSpec{source, restored} {
			if err := g.r.Undefine(ctx, s.ID); err != nil {
				b.Fatal(err)
			}
		}
		if err := g.r.PurgeSnapshot(ctx, snap); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(cold.Seconds(), "s-cold-to-SSH")
		b.ReportMetric(took.Seconds(), "s-snapshot")
		b.ReportMetric(float64(res.SizeBytes)/(1<<20), "MiB-snapshot")
		b.ReportMetric(restore.Seconds(), "s-restore-to-SSH")
	}
}
