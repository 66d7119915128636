package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// checkBooks compares what is held against the instances that live, once
// the cluster settled: each hosted instance not deleted has exactly one
// live allocation and one live IP lease and a domain on its host alone;
// each provider instance not deleted exactly one server at its provider,
// the one it records; nothing else is held. It fails the test for each
// difference and returns how many there were.
func (c *cluster) checkBooks(taps []*reportTap, clouds ...*cloud) int {
	c.t.Helper()
	left := 0
	for what, q := range map[string]string{
		"live allocations of no live instance on their host": `allocations a WHERE released_at IS NULL AND NOT EXISTS
			(SELECT 1 FROM instances i WHERE i.id = a.instance_id AND i.state <> 'DELETED' AND i.host_id = a.host_id)`,
		"hosted instances without a live allocation": `instances i JOIN pools p ON p.id = i.pool_id WHERE p.class = 'vps-host' AND i.state <> 'DELETED'
			AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.instance_id = i.id AND a.released_at IS NULL)`,
		"live IP leases of no live instance": `ip_leases l WHERE released_at IS NULL AND NOT EXISTS
			(SELECT 1 FROM instances i WHERE i.id = l.instance_id AND i.state <> 'DELETED')`,
		"instances with more than one live IP lease": `(SELECT instance_id FROM ip_leases WHERE released_at IS NULL GROUP BY 1 HAVING count(*) > 1) x`,
		"hosted instances without a live IP lease": `instances i JOIN pools p ON p.id = i.pool_id WHERE p.class = 'vps-host' AND i.state <> 'DELETED'
			AND NOT EXISTS (SELECT 1 FROM ip_leases l WHERE l.instance_id = i.id AND l.released_at IS NULL)`,
		"live device claims (no flavor has GPUs)": "device_claims WHERE released_at IS NULL",
	} {
		if n := c.count(q); n != 0 {
			c.t.Errorf("%d %s", n, what)
			left += n
		}
	}
	for _, cl := range clouds {
		left += c.checkServers(cl)
	}
	return left + c.checkDomains(taps)
}

// checkServers waits until the servers at cl are those of its live
// instances, one each, with the IDs they record.
func (c *cluster) checkServers(cl *cloud) int {
	c.t.Helper()
	var diff []string
	testenv.Within(30*time.Second, func() bool {
		want := map[string]string{} // label → server ID recorded
		rows, err := c.db.Query(context.Background(), `SELECT i.id, coalesce(i.provider_server_id, '') FROM instances i
			JOIN pools p ON p.id = i.pool_id JOIN provider_accounts a ON a.id = p.provider_account_id
			WHERE a.provider = $1 AND i.state <> 'DELETED'`, strings.ToLower(cl.kind))
		if err != nil {
			c.t.Fatal(err)
		}
		for rows.Next() {
			var id uuid.UUID
			var server string
			rows.Scan(&id, &server)
			want[id.String()] = server
		}
		diff = diff[:0]
		seen := map[string]bool{}
		for sid, label := range cl.servers() {
			switch recorded, ok := want[label]; {
			case !ok:
				diff = append(diff, fmt.Sprintf("server %s (label %q) of no live instance", sid, label))
			case seen[label]:
				diff = append(diff, fmt.Sprintf("a second server %s for instance %s", sid, label))
			case recorded != sid:
				diff = append(diff, fmt.Sprintf("server %s for instance %s, which records %q", sid, label, recorded))
			}
			seen[label] = true
		}
		for label := range want {
			if !seen[label] {
				diff = append(diff, fmt.Sprintf("no server for instance %s", label))
			}
		}
		return len(diff) == 0
	})
	for _, d := range diff {
		c.t.Errorf("%s: %s", cl.kind, d)
	}
	return len(diff)
}

// checkDomains waits until each host's latest report, made after this
// call, lists the domains of the live instances placed on it, and no
// others.
func (c *cluster) checkDomains(taps []*reportTap) int {
	c.t.Helper()
	since := time.Now()
	var diff []string
	testenv.Within(30*time.Second, func() bool {
		diff = diff[:0]
		for i, tap := range taps {
			name := fmt.Sprintf("hv-%d", i)
			var want []string
			rows, err := c.db.Query(context.Background(), `SELECT i.id FROM instances i JOIN hosts h ON h.id = i.host_id
				WHERE h.name = $1 AND i.state <> 'DELETED' ORDER BY 1`, name)
			if err != nil {
				c.t.Fatal(err)
			}
			for rows.Next() {
				var id uuid.UUID
				rows.Scan(&id)
				want = append(want, ids.Encode(ids.Instance, id))
			}
			got, at := tap.last()
			got = slices.Clone(got)
			slices.Sort(got)
			slices.Sort(want)
			switch {
			case at.Before(since):
				diff = append(diff, fmt.Sprintf("%s has not reported since the cluster settled", name))
			case !slices.Equal(got, want):
				diff = append(diff, fmt.Sprintf("%s has domains %v, want %v", name, got, want))
			}
		}
		return len(diff) == 0
	})
	for _, d := range diff {
		c.t.Errorf("%s", d)
	}
	return len(diff)
}

// checkDelivered waits until a subscriber's view equals the database's,
// deleted instances included, and checks that it missed no change: each
// instance's events come in order of version, each one after the last,
// but where a snapshot (after a resync) stands for what the subscriber
// may have missed.
func (c *cluster) checkDelivered(w *wsClient) {
	c.t.Helper()
	w.converges(c.t, time.Minute, func() map[string]string {
		out := map[string]string{}
		rows, err := c.db.Query(context.Background(), "SELECT id, state, version FROM instances")
		if err != nil {
			c.t.Fatal(err)
		}
		for rows.Next() {
			var id uuid.UUID
			var state string
			var version int
			rows.Scan(&id, &state, &version)
			out[ids.Encode(ids.Instance, id)] = fmt.Sprintf("%s v%d", state, version)
		}
		return out
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	last, gaps, snapshots := map[string]int{}, 0, 0
	for _, ev := range w.events {
		id, prev := ev.Instance.ID, last[ev.Instance.ID]
		if ev.Snapshot {
			snapshots++
		}
		switch {
		case ev.Version <= prev:
			c.t.Errorf("instance %s: version %d delivered after %d", id, ev.Version, prev)
		case ev.Version != prev+1 && !ev.Snapshot:
			gaps++
			if gaps <= 10 {
				c.t.Errorf("instance %s: version %d delivered after %d, not from a snapshot: the changes between were lost", id, ev.Version, prev)
			}
		}
		last[id] = max(prev, ev.Version)
	}
	c.t.Logf("subscriber: %d events, %d from snapshots after a resync, %d gaps", len(w.events), snapshots, gaps)
}

// checkAudit counts the audit log's successful instance mutations: one per
// mutation the load saw accepted, and perhaps one for each whose answer
// was lost.
func (c *cluster) checkAudit(st loadStats) {
	c.t.Helper()
	n := c.count("audit_events WHERE outcome = 'success' AND action LIKE 'instance.%'")
	c.t.Logf("audit: %d successful instance mutations; the load saw %d accepted (%v), %d unanswered", n, st.accepted, st.byAction, st.unanswered)
	if n < st.accepted || n > st.accepted+st.unanswered {
		c.t.Errorf("the audit log has %d successful instance mutations; the load saw %d accepted and %d unanswered", n, st.accepted, st.unanswered)
	}
}

// explainUnsettled logs, for each provider instance not at its desired
// state, what it records, what the providers have under its label, the
// orphan deletions of that label and every log line that names it.
func (c *cluster) explainUnsettled(clouds ...*cloud) {
	rows, err := c.db.Query(context.Background(), `SELECT i.id, i.state, coalesce(i.provider_server_id, ''), i.version FROM instances i
		JOIN pools p ON p.id = i.pool_id WHERE p.class = 'provider' AND i.state <> i.desired_state`)
	if err != nil {
		c.t.Logf("explain: %v", err)
		return
	}
	type stuck struct {
		id            uuid.UUID
		state, server string
		version       int
	}
	var all []stuck
	for rows.Next() {
		var s stuck
		rows.Scan(&s.id, &s.state, &s.server, &s.version)
		all = append(all, s)
	}
	for _, s := range all {
		c.t.Logf("unsettled %s (%s): %s v%d, records server %q", s.id, ids.Encode(ids.Instance, s.id), s.state, s.version, s.server)
		for _, cl := range clouds {
			for sid, label := range cl.servers() {
				if label == s.id.String() {
					c.t.Logf("  %s has server %s for it", cl.kind, sid)
				}
			}
		}
		c.t.Logf("  orphan deletions of its label: %d", c.count("audit_events WHERE action = 'providerAccount.deleteOrphan' AND details->>'instanceLabel' = $1", s.id.String()))
		for _, p := range c.procs {
			b, _ := os.ReadFile(p.log)
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, s.id.String()) {
					c.t.Logf("  %s: %s", p.name, line)
				}
			}
		}
	}
}
