package e2e

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/internal/testenv"
)

// TestSweepListingShifts: Hetzner lists servers 50 a page, and a server
// deleted between two pages of a sweep's listing shifts the next page by
// one, so the listing misses a server that exists. Its instance must not
// be made LOST for it (not even until the next sweep lists it again);
// only the instance whose server was deleted is.
func TestSweepListingShifts(t *testing.T) {
	t.Parallel()
	cl := hetznerCloud(t)
	c := providerCluster(t, cl, 1)
	ids := c.createAll("paged", 60, "RUNNING")
	c.settle(60 * time.Second)
	ws := subscribe(t, c.url, c.member, nil)

	// The first server, on the first page, is deleted behind our back
	// while a listing is between its first and second page.
	victim := ids[0]
	var once sync.Once
	deleted := make(chan struct{})
	cl.before(func(r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/servers" || r.URL.Query().Get("page") != "2" {
			return
		}
		once.Do(func() {
			for sid, label := range cl.ours() {
				if label == uuidOf(t, victim) {
					cl.remove(sid)
				}
			}
			close(deleted)
		})
	})
	<-deleted
	cl.before(nil)
	testenv.Eventually(t, 20*time.Second, "the victim LOST", func() bool { s, _ := c.instanceState(victim); return s == "LOST" })
	// Two more sweeps, each of two pages, list everything again: a wrong
	// LOST has been made and undone by then.
	listed := func() int { return cl.served(http.StatusOK) }
	for range 2 {
		n := listed()
		testenv.Eventually(t, 10*time.Second, "another sweep", func() bool { return listed() > n+2 })
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, ev := range ws.events {
		if ev.Instance.State == "LOST" && ev.Instance.ID != victim {
			t.Fatalf("instance %s went LOST though its server exists (version %d)", ev.Instance.ID, ev.Version)
		}
	}
}

// TestOrphanIDReused: Proxmox gives a deleted VM's ID to the next clone.
// An orphan a sweep saw (a VM with our label that no live instance owns)
// may be gone, and its ID given to a new instance's VM, by the time the
// sweep deletes it by ID: the sweep must not delete the new instance's VM.
func TestOrphanIDReused(t *testing.T) {
	t.Parallel()
	cl := proxmoxCloud(t)
	c := providerCluster(t, cl, 2)
	stray := uuid.NewString()
	cl.add(stray)
	var strayID string
	for sid, label := range cl.ours() {
		if label == stray {
			strayID = sid
		}
	}
	testenv.Eventually(t, 10*time.Second, "the stray noted as an orphan", func() bool {
		return c.count("provider_orphans WHERE server_id = $1", strayID) == 1
	})
	// Once it is due for deletion, a sweep's listing still shows it, but by
	// the time the listing reaches the sweep the stray is gone and an
	// instance made since got its ID.
	var reused string
	var hooked, settled atomic.Bool // the hook began; it ended
	cl.after(func(r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/cluster/resources") ||
			c.count("provider_orphans WHERE server_id = $1 AND first_seen_at <= now() - interval '1 second'", strayID) == 0 ||
			!hooked.CompareAndSwap(false, true) {
			return
		}
		defer settled.Store(true)
		cl.remove(strayID)
		data, errs, err := post(c.url, c.member, createQuery, map[string]any{"in": map[string]any{"poolId": c.pool, "flavorId": c.flavor,
			"imageId": c.image, "name": "reuser", "sshKeys": []string{sshKey}, "desiredState": "STOPPED"}})
		if err != nil || len(errs) > 0 {
			t.Errorf("create: %v %v", err, errs)
			return
		}
		reused = data["createInstance"].(map[string]any)["instance"].(map[string]any)["id"].(string)
		if !testenv.Within(10*time.Second, func() bool {
			return c.count("instances WHERE id = $1 AND provider_server_id = $2", uuidOf(t, reused), strayID) == 1
		}) {
			t.Errorf("the new instance did not get VM %s", strayID)
		}
	})
	testenv.Eventually(t, 20*time.Second, "the sweep to delete the orphan, or forget it", func() bool {
		return settled.Load() && c.count("provider_orphans WHERE server_id = $1", strayID) == 0
	})
	cl.after(nil)
	if reused == "" {
		t.FailNow()
	}
	if got := cl.ours()[strayID]; got != uuidOf(t, reused) {
		t.Fatalf("VM %s carries %q: the sweep deleted the new instance's VM, taking it for the orphan that had its ID", strayID, got)
	}
	testenv.Eventually(t, 20*time.Second, "the new instance STOPPED", func() bool { s, _ := c.instanceState(reused); return s == "STOPPED" })
}
