package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/testguest"
	"github.com/better-compute/vps/internal/vps"
)

// guestImage builds (or finds) the project's tiny bootable guest: Debian's
// kernel and an initramfs with busybox and dropbear that reads the NoCloud
// seed (scripts/guest; its README says why not the cloud kernel).
func guestImage(t testing.TB) (url, format, sum string) { return testguest.Image(t) }

// bridge makes a host bridge with the pool's gateway address, so the test
// reaches guests at their leased addresses.
func bridge(t testing.TB, name, addr string) {
	t.Helper()
	run := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	testenv.HostNetwork(t)
	exec.Command("ip", "link", "del", name).Run()
	run("link", "add", name, "type", "bridge")
	run("addr", "add", addr, "dev", name)
	run("link", "set", name, "up")
	t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
}

// TestRealGuest boots a real guest through the real server, gateway,
// reconciler and host daemon on libvirt, logs into it over SSH with the
// instance's key, runs a command, then stops and deletes it and checks
// nothing remains.
func TestRealGuest(t *testing.T) {
	running, login := realGuest(t)
	t.Logf("createInstance → RUNNING %v, → SSH login %v", running.Round(time.Millisecond), login.Round(time.Millisecond))
}

// BenchmarkCreateToSSH measures TestRealGuest's path: from createInstance
// to the first SSH login, booting the guest under software emulation.
func BenchmarkCreateToSSH(b *testing.B) {
	for range b.N {
		running, login := realGuest(b)
		b.ReportMetric(running.Seconds(), "s-to-RUNNING")
		b.ReportMetric(login.Seconds(), "s-to-SSH")
	}
}

func realGuest(t testing.TB) (running, login time.Duration) {
	url, format, sum := guestImage(t)
	bridge(t, "bcbr0", "10.50.0.1/22")
	c := start(t, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
	dir := libvirtHostWith(t, c, 4, "--bridge", "bcbr0")
	c.useImage(url, sum, format, 256)

	signer, key := guestKey()
	key += " e2e@test"

	start := time.Now()
	id := c.must(c.member, `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`,
		map[string]any{"in": map[string]any{"poolId": c.pool, "flavorId": c.flavor, "imageId": c.image, "name": "guest-1", "sshKeys": []string{key}}},
		"createInstance", "instance", "id")
	c.settle(2 * time.Minute)
	running = time.Since(start)
	out := waitSSH(t, dir, id, c.leaseOf(id), signer, "hostname; cat /root/.ssh/authorized_keys")
	login = time.Since(start)
	if !strings.HasPrefix(out, "guest-1\n") || !strings.Contains(out, key) {
		t.Fatalf("the guest said %q", out)
	}

	c.set("stopInstance", id)
	c.settle(2 * time.Minute)
	c.set("deleteInstance", id)
	c.settle(2 * time.Minute)
	assertGone(t, dir, id)
	c.noLeaks()
	return running, login
}

// guestKey makes an SSH key pair for a test's guests: the signer to log in
// with and the authorized_keys line to give them.
func guestKey() (ssh.Signer, string) { return testguest.Key() }

// leaseOf is the address instance (an API ID) holds a live lease of, once
// it holds one (within 2 minutes).
func (c *cluster) leaseOf(instance string) string {
	c.t.Helper()
	id := decode(c.t, ids.Instance, instance)
	var addr string
	testenv.Eventually(c.t, 2*time.Minute, "a lease of "+instance, func() bool {
		return c.db.QueryRow(context.Background(), "SELECT host(address) FROM ip_leases WHERE instance_id = $1 AND released_at IS NULL", id).Scan(&addr) == nil
	})
	return addr
}

// reaches says whether the guest of instance id at addr gets an answer to
// one ping to the address to.
func reaches(t testing.TB, dir, id, addr string, signer ssh.Signer, to string) bool {
	t.Helper()
	return strings.TrimSpace(waitSSH(t, dir, id, addr, signer, "ping -c 1 -W 2 "+to+" >/dev/null 2>&1; echo $?")) == "0"
}

// waitSSH runs cmd as root over SSH on the guest of instance id at addr
// once it answers, within 3 minutes, and returns its output; else it fails
// with the end of the guest's console (in the host's state directory dir).
func waitSSH(t testing.TB, dir, id, addr string, signer ssh.Signer, cmd string) string {
	t.Helper()
	return testguest.WaitSSH(t, filepath.Join(dir, "consoles", id+".log"), addr, signer, cmd)
}

func tail(b []byte) string { return testguest.Tail(b) }
