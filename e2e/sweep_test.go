package e2e

import (
	"net/http"
	"sync"
	"testing"
	"time"

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
