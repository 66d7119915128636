package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/testguest"
	"github.com/better-compute/vps/internal/vps"
)

// guestSnapshotCluster runs the real processes with a libvirt host on a
// bridge, the test guest's image, and a template of it with key; it
// returns the cluster, the host's state directory and the template.
func guestSnapshotCluster(t testing.TB, key string) (*cluster, string, string) {
	url, format, sum := guestImage(t)
	const br, gw = "bcbr0", "10.50.0.1" // the seeded IP pool's network
	bridge(t, br, gw+"/22")
	c := sandboxCluster(t, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
	dir := libvirtHostWith(t, c, 4, "--bridge", br)
	c.useImage(url, sum, format, 256)
	return c, dir, c.sandboxTemplate("base", map[string]any{"sshKeys": []string{key}})
}

// guestSandbox creates a sandbox (extra as createSandbox's), waits for it
// to be RUNNING and for its guest to answer SSH with signer, and returns
// it with its address.
func (c *cluster) guestSandbox(dir, template string, extra map[string]any, signer ssh.Signer) (sandboxRef, string) {
	c.t.Helper()
	ref := c.createSandbox(template, extra)
	addr := c.leaseOf(ref.instance)
	testenv.Eventually(c.t, 3*time.Minute, "sandbox "+ref.id+" RUNNING", func() bool { return c.sandboxState(ref.id) == "RUNNING" })
	waitSSH(c.t, dir, ref.instance, addr, signer, "true")
	return ref, addr
}

// TestRealSandboxSnapshot runs a snapshot and a restore on real guests
// through the real server, reconciler and libvirt host daemon: a file
// written and synced in a sandbox is in a sandbox restored from its
// snapshot, which has its own address, hostname and keys; the source
// sandbox runs on throughout, its SSH connection open across the
// snapshot. Deleting everything leaves no domain, disk or snapshot.
func TestRealSandboxSnapshot(t *testing.T) {
	signer, key := guestKey()
	c, dir, tmpl := guestSnapshotCluster(t, key)
	src, addr := c.guestSandbox(dir, tmpl, nil, signer)

	session, err := testguest.Dial(addr, signer)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	srcName, err := testguest.Exec(session, "echo kept > /data/kept.txt && sync && hostname")
	if err != nil {
		t.Fatalf("write the file: %v", err)
	}

	begin := time.Now()
	id := c.takeSnapshot(src.id, "deps")
	snap := c.settledSnapshot(id, 3*time.Minute)
	if snap.state != "READY" {
		t.Fatalf("snapshot %+v, want READY", snap)
	}
	t.Logf("createSandboxSnapshot → READY in %v, %d bytes", time.Since(begin).Round(time.Millisecond), snap.size)
	if out, err := testguest.Exec(session, "cat /data/kept.txt"); err != nil || out != "kept\n" {
		t.Fatalf("the source's session after the snapshot: %q %v", out, err)
	}

	// The restore is given a key of its own beside the template's.
	own, ownKey := guestKey()
	restored, restoredAddr := c.guestSandbox(dir, "", map[string]any{"fromSnapshot": id, "templateId": nil, "sshKeys": []string{ownKey}}, own)
	if restoredAddr == addr {
		t.Errorf("the restored sandbox has its source's address %s", addr)
	}
	out := waitSSH(t, dir, restored.instance, restoredAddr, own, "cat /data/kept.txt; hostname")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || lines[0] != "kept" || lines[1] == strings.TrimSpace(srcName) {
		t.Errorf("the restored guest says %q; want the file kept and a hostname other than %q", out, srcName)
	}
	if out, err := testguest.Exec(session, "cat /data/kept.txt"); err != nil || out != "kept\n" {
		t.Fatalf("the source's session after the restore: %q %v", out, err)
	}

	for _, ref := range []sandboxRef{src, restored} {
		if codes := c.sandboxOp("deleteSandbox", ref.id, nil); len(codes) > 0 {
			t.Fatalf("deleteSandbox: %v", codes)
		}
	}
	c.must(c.member, `mutation($id: ID!) { deleteSandboxSnapshot(input: {id: $id}) { sandboxSnapshot { id } } }`, map[string]any{"id": id})
	c.settle(2 * time.Minute)
	testenv.Eventually(t, time.Minute, "the snapshot purged", func() bool { return c.count("sandbox_snapshots WHERE purged") == 1 })
	testenv.Eventually(t, 30*time.Second, "the host's overlays removed", func() bool {
		o, _ := os.ReadDir(filepath.Join(dir, "overlays"))
		return len(o) == 0
	})
	if left, _ := os.ReadDir(filepath.Join(dir, "snapshots")); len(left) != 0 {
		t.Errorf("the snapshot store keeps %v", left)
	}
	for _, ref := range []sandboxRef{src, restored} {
		assertGone(t, dir, ref.instance)
	}
	c.noLeaks()
}

// BenchmarkRealSnapshotRestore measures on real guests through the real
// processes, side by side in one run: createSandboxSnapshot → READY of a
// running sandbox (and the snapshot's size), then, alternately, a sandbox
// restored from it and a cold one of the same template, each from
// createSandbox to a finished SSH login. Each sample runs alone: the
// previous sample's sandbox is deleted and its domain gone first.
func BenchmarkRealSnapshotRestore(b *testing.B) {
	signer, key := guestKey()
	c, dir, tmpl := guestSnapshotCluster(b, key)
	src, _ := c.guestSandbox(dir, tmpl, nil, signer)
	begin := time.Now()
	id := c.takeSnapshot(src.id, "base")
	snap := c.settledSnapshot(id, 3*time.Minute)
	if snap.state != "READY" {
		b.Fatalf("snapshot %+v", snap)
	}
	b.ReportMetric(ms(time.Since(begin)), "snapshot-ms")
	b.ReportMetric(float64(snap.size)/(1<<20), "snapshot-MiB")

	lat := map[string][]time.Duration{}
	for range b.N {
		for _, k := range []struct {
			name  string
			extra map[string]any
		}{{"restore", map[string]any{"fromSnapshot": id, "templateId": nil}}, {"cold", nil}} {
			t0 := time.Now()
			ref, _ := c.guestSandbox(dir, tmpl, k.extra, signer)
			lat[k.name] = append(lat[k.name], time.Since(t0))
			if codes := c.sandboxOp("deleteSandbox", ref.id, nil); len(codes) > 0 {
				b.Fatalf("deleteSandbox: %v", codes)
			}
			c.settle(2 * time.Minute)
		}
	}
	b.StopTimer()
	for k, l := range lat {
		slices.Sort(l)
		b.ReportMetric(ms(l[len(l)/2]), k+"-login-p50-ms")
		b.ReportMetric(ms(l[len(l)-1]), k+"-login-max-ms")
	}
}
