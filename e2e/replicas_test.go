package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServesDeliverOnce: with subscribers spread over two serve processes,
// every subscriber sees every event of every instance exactly once and in
// order (versions 1, 2, 3, … with no repeat and no gap), whichever serve
// it is connected to.
func TestServesDeliverOnce(t *testing.T) {
	t.Parallel()
	const perServe, changes = 5, 20
	c := start(t, options{serves: 2, hosts: 1, reconcilers: 1, hostVcpus: 100})
	var clients []*wsClient
	for _, url := range c.urls {
		for range perServe {
			clients = append(clients, subscribe(t, url, c.member, nil))
		}
	}
	// One instance seen everywhere says every subscription is live; its
	// own first events may have come before some were.
	warm := c.create("warm", "RUNNING")
	for _, ws := range clients {
		ws.converges(t, 20*time.Second, func() map[string]string {
			if strings.HasPrefix(ws.view()[warm], "RUNNING") {
				return ws.view()
			}
			return map[string]string{warm: "RUNNING"}
		})
	}
	for i := range changes {
		c.create("vm-"+strconv.Itoa(i), "RUNNING")
	}
	c.settle(30 * time.Second)
	want := c.dbView(t, false)
	for i, ws := range clients {
		t.Run(fmt.Sprintf("serve-%d-client-%d", i/perServe+1, i%perServe), func(t *testing.T) {
			ws.converges(t, 20*time.Second, func() map[string]string { return want })
			ws.mu.Lock()
			defer ws.mu.Unlock()
			seq, first := sequence{}, map[string]int{}
			for _, ev := range ws.events {
				if ev.Snapshot {
					t.Fatalf("a resync's snapshot of %s: events were lost", ev.Instance.ID)
				}
				if _, ok := first[ev.Instance.ID]; !ok {
					first[ev.Instance.ID] = ev.Version
				}
				if err := seq.next(ev.Instance.ID, ev.Version); err != nil {
					t.Fatal(err)
				}
			}
			for id, v := range first {
				if id != warm && v != 1 {
					t.Errorf("instance %s: first event of version %d, not 1", id, v)
				}
			}
			if len(first) != changes+1 {
				t.Errorf("events of %d instances, want %d", len(first), changes+1)
			}
		})
	}
}
