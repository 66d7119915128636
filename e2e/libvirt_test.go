package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
)

// libvirtHost gives the cluster a host that runs real domains through
// libvirtd (software emulation), with its state in a directory libvirt's
// QEMU user can reach.
func libvirtHost(t testing.TB, c *cluster) string {
	return libvirtHostWith(t, c, 4)
}

// libvirtHostWith is libvirtHost with vcpus of capacity. Domains of this
// test's instances that outlive it (a failed test) are removed.
func libvirtHostWith(t testing.TB, c *cluster, vcpus int, args ...string) string {
	t.Helper()
	if out, err := exec.Command("virsh", "-c", "qemu:///system", "version").CombinedOutput(); err != nil {
		t.Fatalf("LIBVIRTD IS NOT RUNNING (make test starts it): %v %s", err, out)
	}
	dir, err := os.MkdirTemp("/var/tmp", "bc-e2e-host-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cred := c.adopt("kvm-1", vcpus)
	t.Cleanup(func() {
		rows, err := c.db.Query(context.Background(), "SELECT id FROM instances")
		if err != nil {
			return
		}
		defer rows.Close()
		for rows.Next() {
			var id uuid.UUID
			rows.Scan(&id)
			name := "bc-" + ids.Encode(ids.Instance, id)
			exec.Command("virsh", "-c", "qemu:///system", "destroy", name).Run()
			exec.Command("virsh", "-c", "qemu:///system", "undefine", name).Run()
		}
	})
	c.hosts = append(c.hosts, c.proc("host-libvirt", []string{"BC_HOST_CREDENTIAL=" + cred},
		append([]string{binary(t), "host", "--runtime", "libvirt", "--domain-type", "qemu", "--state-dir", dir, "--server", c.url,
			"--heartbeat", "500ms", "--shutdown-timeout", "2s"}, args...)...))
	return dir
}

// image writes a small qcow2 base image and returns its file URL and sha256.
func qcow2Image(t testing.TB) (url, sum string) {
	t.Helper()
	dir, _ := os.MkdirTemp("/var/tmp", "bc-e2e-img-")
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "base.qcow2")
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", path, "64M").CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v %s", err, out)
	}
	b, _ := os.ReadFile(path)
	h := sha256.Sum256(b)
	return "file://" + path, hex.EncodeToString(h[:])
}

// TestCorruptImage: an image whose bytes do not match its sha256 puts the
// instance in ERROR with that reason, and no domain or disk is made.
func TestCorruptImage(t *testing.T) {
	c := start(t, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
	dir := libvirtHost(t, c)
	url, _ := qcow2Image(t)
	bad := c.must(c.operator, `mutation($u: String!) { registerImage(input: {name: "corrupt", sourceUrl: $u, sha256: "`+strings.Repeat("e", 64)+`", format: QCOW2, visibility: PUBLIC}) { image { id } } }`,
		map[string]any{"u": url}, "registerImage", "image", "id")
	c.image = bad
	id := c.create("vm", "RUNNING")
	testenv.Eventually(t, 60*time.Second, "ERROR with the checksum as the reason", func() bool {
		return c.count("instances WHERE state = 'ERROR' AND state_reason LIKE '%sha256 mismatch%'") == 1
	})
	if out, _ := exec.Command("virsh", "-c", "qemu:///system", "list", "--all", "--name").Output(); strings.Contains(string(out), id) {
		t.Fatal("a domain was defined for it")
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "overlays")); len(left) != 0 {
		t.Fatalf("overlays left: %v", left)
	}
	c.set("deleteInstance", id)
	c.settle(30 * time.Second)
}

// TestLibvirtInstance runs an instance's whole life on a libvirt host: its
// domain is defined, started, stopped and deleted, and nothing remains.
func TestLibvirtInstance(t *testing.T) {
	c := start(t, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
	dir := libvirtHost(t, c)
	url, sum := qcow2Image(t)
	c.useImage(url, sum, "qcow2", 64)
	id := c.create("vm", "RUNNING")
	c.settle(60 * time.Second)
	if out, _ := exec.Command("virsh", "-c", "qemu:///system", "list", "--all", "--name").Output(); !strings.Contains(string(out), "bc-"+id) {
		t.Fatalf("no domain bc-%s among %q", id, out)
	}
	c.set("stopInstance", id)
	c.settle(60 * time.Second)
	c.set("deleteInstance", id)
	c.settle(60 * time.Second)
	assertGone(t, dir, id)
	c.noLeaks()
}

// TestHostDaemonKilledMidCreate kills the libvirt host daemon with SIGKILL
// again and again while instances are being created, and starts it again
// each time: in the end each instance has exactly one domain and one
// overlay.
func TestHostDaemonKilledMidCreate(t *testing.T) {
	c := start(t, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
	dir := libvirtHost(t, c)
	url, sum := qcow2Image(t)
	c.useImage(url, sum, "qcow2", 64)
	host := c.hosts[len(c.hosts)-1]
	var ids []string
	for i := range 4 {
		ids = append(ids, c.create(fmt.Sprintf("vm-%d", i), "RUNNING"))
		time.Sleep(time.Duration(50+100*i) * time.Millisecond) // kill at different points of the work
		host.signal(syscall.SIGKILL)
		host.start()
	}
	c.settle(90 * time.Second)
	out, _ := exec.Command("virsh", "-c", "qemu:///system", "list", "--all", "--name").Output()
	for _, id := range ids {
		if n := strings.Count(string(out), "bc-"+id); n != 1 {
			t.Errorf("%s has %d domains", id, n)
		}
	}
	overlays, _ := os.ReadDir(filepath.Join(dir, "overlays"))
	if len(overlays) != len(ids) {
		t.Errorf("%d overlays for %d instances", len(overlays), len(ids))
	}
	for _, id := range ids {
		c.set("deleteInstance", id)
	}
	c.settle(60 * time.Second)
	c.noLeaks()
}

// useImage registers a public, verified image and a one-vCPU flavor of
// memoryMB, and makes them the ones c.create uses.
func (c *cluster) useImage(url, sum, format string, memoryMB int) {
	c.t.Helper()
	c.image = c.must(c.operator, `mutation($u: String!, $s: String!, $f: ImageFormat!) { registerImage(input: {name: "img", sourceUrl: $u, sha256: $s, format: $f, visibility: PUBLIC, verified: true}) { image { id } } }`,
		map[string]any{"u": url, "s": sum, "f": strings.ToUpper(format)}, "registerImage", "image", "id")
	c.flavor = c.must(c.operator, `mutation($m: Int!) { createFlavor(input: {name: "vm", vcpus: 1, memoryMb: $m, diskGb: 1}) { flavor { id } } }`,
		map[string]any{"m": memoryMB}, "createFlavor", "flavor", "id")
}

// assertGone checks that libvirt has no domain of instance id and the host's
// state directory no overlay or seed.
func assertGone(t testing.TB, dir, id string) {
	t.Helper()
	if out, _ := exec.Command("virsh", "-c", "qemu:///system", "list", "--all", "--name").Output(); strings.Contains(string(out), "bc-"+id) {
		t.Fatalf("the domain of %s remains", id)
	}
	for _, sub := range []string{"overlays", "seeds"} {
		if left, _ := os.ReadDir(filepath.Join(dir, sub)); len(left) != 0 {
			t.Fatalf("%s left: %v", sub, left)
		}
	}
}
