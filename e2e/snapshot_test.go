package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// storeHas reports whether a host's snapshot store holds a file of
// snapshot id.
func storeHas(t testing.TB, hostDir, id string) bool {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(hostDir, "snapshots"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), id) {
			return true
		}
	}
	return false
}

// TestSandboxSnapshot: a RUNNING sandbox's snapshot settles READY with its
// size and sha256, in its host's store; a sandbox restored from it runs on
// that host, with its own address; deleting the snapshot hides it at once
// and purges it from the host, and nothing is left.
func TestSandboxSnapshot(t *testing.T) {
	t.Parallel()
	c := sandboxCluster(t, options{hosts: 2, reconcilers: 1, hostVcpus: 8})
	tmpl := c.sandboxTemplate("snap", nil)
	src := c.createSandbox(tmpl, nil)
	testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(src.id) == "RUNNING" })

	id := c.takeSnapshot(src.id, "deps")
	snap := c.settledSnapshot(id, 30*time.Second)
	if snap.state != "READY" || snap.size <= 0 || !sha256Hex.MatchString(snap.sha256) {
		t.Fatalf("snapshot %+v, want READY with a size and a sha256", snap)
	}
	host := c.hostOf(src.instance)
	if !storeHas(t, c.hostDir(host), id) {
		t.Fatalf("host %s's store has no file of %s", host, id)
	}

	restored := c.createSandbox("", map[string]any{"fromSnapshot": id, "templateId": nil})
	if restored.startedFrom != "COLD" {
		t.Errorf("a restore started %s, want COLD", restored.startedFrom)
	}
	testenv.Eventually(t, 30*time.Second, "the restored sandbox RUNNING", func() bool { return c.sandboxState(restored.id) == "RUNNING" })
	if got := c.hostOf(restored.instance); got != host {
		t.Errorf("restored on %s, want the snapshot's host %s", got, host)
	}
	if a, b := c.leaseOf(src.instance), c.leaseOf(restored.instance); a == b {
		t.Errorf("the restored sandbox has its source's address %s", a)
	}
	if src.instance == restored.instance {
		t.Error("the restore reused the source's instance")
	}

	c.must(c.member, `mutation($id: ID!) { deleteSandboxSnapshot(input: {id: $id}) { sandboxSnapshot { id } } }`, map[string]any{"id": id})
	if got := c.snapshot(id); got.id != "" {
		t.Fatalf("a deleted snapshot still reads %+v", got)
	}
	testenv.Eventually(t, 30*time.Second, "the snapshot purged", func() bool {
		return c.count("sandbox_snapshots WHERE purged") == 1
	})
	if storeHas(t, c.hostDir(host), id) {
		t.Errorf("the purged snapshot's file is still on %s", host)
	}
	for _, s := range []sandboxRef{src, restored} {
		if codes := c.sandboxOp("deleteSandbox", s.id, nil); len(codes) > 0 {
			t.Fatalf("deleteSandbox: %v", codes)
		}
	}
	c.settle(30 * time.Second)
	c.noLeaks()
}

// TestSnapshotRestoreWaitsForItsHost: a restore goes only to the host that
// holds its snapshot; while that host is full it stays PENDING with a
// reason naming it, though another host has room, and it runs once room
// frees there.
func TestSnapshotRestoreWaitsForItsHost(t *testing.T) {
	t.Parallel()
	c := sandboxCluster(t, options{hosts: 2, reconcilers: 1, hostVcpus: 2})
	tmpl := c.sandboxTemplate("snap", nil)
	src := c.createSandbox(tmpl, nil)
	testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(src.id) == "RUNNING" })
	id := c.takeSnapshot(src.id, "base")
	if s := c.settledSnapshot(id, 30*time.Second); s.state != "READY" {
		t.Fatalf("snapshot %+v", s)
	}
	host := c.hostOf(src.instance)
	// Fill the snapshot's host; fillers placed elsewhere are let be.
	var filler sandboxRef
	testenv.Eventually(t, 30*time.Second, "the snapshot's host full", func() bool {
		s := c.createSandbox(tmpl, nil)
		testenv.Eventually(t, 30*time.Second, "a filler placed", func() bool { return c.sandboxState(s.id) == "RUNNING" })
		if c.hostOf(s.instance) == host {
			filler = s
			return true
		}
		return false
	})
	restored := c.createSandbox("", map[string]any{"fromSnapshot": id, "templateId": nil})
	testenv.Eventually(t, 30*time.Second, "the restore PENDING naming its host", func() bool {
		var reason string
		c.db.QueryRow(t.Context(), `SELECT state || ' ' || state_reason FROM instances WHERE sandbox_id = $1`, decode(t, "sbx", restored.id)).Scan(&reason)
		return strings.HasPrefix(reason, "PENDING ") && strings.Contains(reason, host)
	})
	if codes := c.sandboxOp("deleteSandbox", filler.id, nil); len(codes) > 0 {
		t.Fatalf("deleteSandbox: %v", codes)
	}
	testenv.Eventually(t, 30*time.Second, "the restore RUNNING once room freed", func() bool { return c.sandboxState(restored.id) == "RUNNING" })
	if got := c.hostOf(restored.instance); got != host {
		t.Errorf("restored on %s, want %s", got, host)
	}
}

// TestSnapshotLanes: while a bulk snapshot takes 30 s on a host, an
// interactive command to the same host (the purge of a deleted snapshot)
// completes: the purge is confirmed while the snapshot is still running.
func TestSnapshotLanes(t *testing.T) {
	t.Parallel()
	c := sandboxCluster(t, options{hosts: 1, reconcilers: 1, hostVcpus: 8, hostArgs: []string{"--fake-snapshot-delay", "30s"}})
	tmpl := c.sandboxTemplate("snap", nil)
	src := c.createSandbox(tmpl, nil)
	testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(src.id) == "RUNNING" })
	first := c.takeSnapshot(src.id, "first")
	if s := c.settledSnapshot(first, 90*time.Second); s.state != "READY" {
		t.Fatalf("first snapshot %+v", s)
	}
	second := c.takeSnapshot(src.id, "second")
	testenv.Eventually(t, 30*time.Second, "the second snapshot's command RUNNING", func() bool {
		state, _ := c.snapshotCommand(second)
		return state == "RUNNING"
	})
	deleted := time.Now()
	c.must(c.member, `mutation($id: ID!) { deleteSandboxSnapshot(input: {id: $id}) { sandboxSnapshot { id } } }`, map[string]any{"id": first})
	testenv.Eventually(t, 30*time.Second, "the first snapshot purged", func() bool { return c.count("sandbox_snapshots WHERE purged") == 1 })
	purged := time.Since(deleted)
	if state, _ := c.snapshotCommand(second); state != "RUNNING" {
		t.Fatalf("the bulk snapshot's command is %s when the purge was confirmed, want RUNNING: the purge waited for it", state)
	}
	t.Logf("purge confirmed %v after deleteSandboxSnapshot, beside a running 30 s snapshot", purged.Round(time.Millisecond))
	if s := c.settledSnapshot(second, 90*time.Second); s.state != "READY" {
		t.Fatalf("second snapshot %+v", s)
	}
}

// TestSnapshotFaults: a snapshot ends once whatever fails around it.
func TestSnapshotFaults(t *testing.T) {
	t.Parallel()
	t.Run("host daemon killed mid-snapshot", func(t *testing.T) {
		t.Parallel()
		c := sandboxCluster(t, options{hosts: 1, reconcilers: 1, hostVcpus: 8, hostArgs: []string{"--fake-snapshot-delay", "3s"}})
		src := c.createSandbox(c.sandboxTemplate("snap", nil), nil)
		testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(src.id) == "RUNNING" })
		id := c.takeSnapshot(src.id, "s")
		testenv.Eventually(t, 30*time.Second, "the command RUNNING", func() bool { state, _ := c.snapshotCommand(id); return state == "RUNNING" })
		c.hosts[0].signal(syscall.SIGKILL)
		c.hosts[0].start()
		s := c.settledSnapshot(id, time.Minute)
		testenv.Eventually(t, 30*time.Second, "the command acknowledged", func() bool { _, ack := c.snapshotCommand(id); return ack })
		state, _ := c.snapshotCommand(id)
		if (s.state == "READY") != (state == "SUCCEEDED") {
			t.Fatalf("snapshot %s, its command %s", s.state, state)
		}
		if n := c.count("host_commands WHERE kind = 'instance.snapshot'"); n != 1 {
			t.Errorf("%d snapshot commands, want the one", n)
		}
		t.Logf("ended %s (%s)", s.state, s.reason)
	})
	t.Run("host gone for good", func(t *testing.T) {
		t.Parallel()
		c := sandboxCluster(t, options{hosts: 1, reconcilers: 1, hostVcpus: 8, hostArgs: []string{"--fake-snapshot-delay", "10m"},
			reconcileEnv: []string{"BC_SNAPSHOT_TIMEOUT=5s"}})
		src := c.createSandbox(c.sandboxTemplate("snap", nil), nil)
		testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(src.id) == "RUNNING" })
		id := c.takeSnapshot(src.id, "s")
		testenv.Eventually(t, 30*time.Second, "the command RUNNING", func() bool { state, _ := c.snapshotCommand(id); return state == "RUNNING" })
		c.hosts[0].signal(syscall.SIGKILL)
		s := c.settledSnapshot(id, time.Minute)
		if s.state != "FAILED" || !strings.Contains(s.reason, "deadline") {
			t.Fatalf("snapshot %+v, want FAILED at its deadline", s)
		}
		if n := c.count("host_commands WHERE state IN ('QUEUED', 'RUNNING')"); n != 0 {
			t.Errorf("%d commands still open", n)
		}
	})
	t.Run("reconciler killed before it settles", func(t *testing.T) {
		t.Parallel()
		c := sandboxCluster(t, options{hosts: 1, reconcilers: 1, hostVcpus: 8, hostArgs: []string{"--fake-snapshot-delay", "2s"}})
		src := c.createSandbox(c.sandboxTemplate("snap", nil), nil)
		testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(src.id) == "RUNNING" })
		id := c.takeSnapshot(src.id, "s")
		testenv.Eventually(t, 30*time.Second, "the command RUNNING", func() bool { state, _ := c.snapshotCommand(id); return state == "RUNNING" })
		c.reconcs[0].signal(syscall.SIGKILL)
		testenv.Eventually(t, 30*time.Second, "the command SUCCEEDED", func() bool { state, _ := c.snapshotCommand(id); return state == "SUCCEEDED" })
		if s := c.snapshot(id); s.state != "PENDING" {
			t.Fatalf("settled %s with no reconciler", s.state)
		}
		c.reconcs[0].start()
		if s := c.settledSnapshot(id, 30*time.Second); s.state != "READY" {
			t.Fatalf("snapshot %+v, want READY", s)
		}
	})
}
