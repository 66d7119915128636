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
	left := c.none(map[string]string{
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
	})
	for _, cl := range clouds {
		left += c.checkServers(cl)
	}
	return left + c.checkDomains(taps)
}

// none fails the test for each of checks (what it counts → what to count,
// as for count) that counts anything, and returns how many it counted in
// all.
func (c *cluster) none(checks map[string]string) int {
	c.t.Helper()
	left := 0
	for what, q := range checks {
		if n := c.count(q); n != 0 {
			c.t.Errorf("%d %s", n, what)
			left += n
		}
	}
	return left
}

// checkSandboxBooks checks what sandboxes hold, once the cluster settled:
// each sandbox has one instance; a live one is RUNNING or PAUSED as its
// instance is asked to be, before its deadline; an ended one's instance
// is DELETED, and an expired one ended no sooner than its deadline; a
// warm instance is claimed (claimed_at) exactly when a sandbox holds it,
// that sandbox started WARM on it, of the template version it was made
// of; no deleted template keeps a warm instance; and each of templates
// keeps its warm count of free instances PAUSED, all of its current
// version. It fails the test for each difference and returns how many
// there were.
func (c *cluster) checkSandboxBooks(templates []string) int {
	c.t.Helper()
	left := c.none(map[string]string{
		"sandboxes without an instance": "sandboxes s WHERE NOT EXISTS (SELECT 1 FROM instances i WHERE i.sandbox_id = s.id)",
		"sandboxes holding more than one instance": `(SELECT sandbox_id FROM instances WHERE sandbox_id IS NOT NULL
			GROUP BY 1 HAVING count(*) > 1) x`,
		"live sandboxes not RUNNING or PAUSED as their instance is asked to be": `sandboxes s JOIN instances i ON i.sandbox_id = s.id
			WHERE s.ended_as IS NULL AND (i.desired_state NOT IN ('RUNNING', 'PAUSED') OR sandbox_state(s.ended_as, i.state, i.desired_state) <> i.desired_state)`,
		"live sandboxes past their deadline": "sandboxes WHERE ended_as IS NULL AND expires_at < now()",
		"ended sandboxes whose instance is not DELETED": `sandboxes s JOIN instances i ON i.sandbox_id = s.id
			WHERE s.ended_as IS NOT NULL AND i.state <> 'DELETED'`,
		"sandboxes expired before their deadline": "sandboxes WHERE ended_as = 'EXPIRED' AND ended_at < expires_at",
		"warm instances claimed but held by no sandbox, or held but not claimed": `instances
			WHERE warm_template_id IS NOT NULL AND (claimed_at IS NULL) <> (sandbox_id IS NULL)`,
		"instances claimed from no warm pool": "instances WHERE warm_template_id IS NULL AND claimed_at IS NOT NULL",
		"sandboxes whose startedFrom disagrees with their instance's claim": `sandboxes s JOIN instances i ON i.sandbox_id = s.id
			WHERE (s.started_from = 'WARM') <> (i.claimed_at IS NOT NULL)`,
		"sandboxes started WARM on an instance of another template version": `sandboxes s JOIN instances i ON i.sandbox_id = s.id
			WHERE s.started_from = 'WARM' AND i.warm_template_version IS DISTINCT FROM s.template_version`,
		"free warm instances of deleted templates not DELETED": `instances i JOIN sandbox_templates t ON t.id = i.warm_template_id
			WHERE t.deleted_at IS NOT NULL AND i.claimed_at IS NULL AND i.state <> 'DELETED'`,
	})
	for _, tmpl := range templates {
		var paused, current, old, want int
		if !testenv.Within(time.Minute, func() bool {
			paused, current, old, want = c.warm(tmpl, "PAUSED", true), c.warm(tmpl, "", true), c.warm(tmpl, "", false), c.warmCount(tmpl)
			return paused == want && current == want && old == 0
		}) {
			c.t.Errorf("template %s keeps %d free warm instances of its version (%d PAUSED) and %d of older ones; want %d PAUSED and none older",
				tmpl, current, paused, old, want)
			left++
		}
	}
	return left
}

// awaitExpiry waits until every sandbox whose deadline falls within
// horizon has ended, so that no expiry changes what the checks read, and
// logs how many expired and how late the latest was.
func (c *cluster) awaitExpiry(horizon time.Duration) {
	c.t.Helper()
	testenv.Eventually(c.t, 2*time.Minute, "the short-lived sandboxes to expire", func() bool {
		return c.count("sandboxes WHERE ended_as IS NULL AND expires_at < now() + make_interval(secs => $1)", horizon.Seconds()) == 0
	})
	var n int
	var late time.Duration
	if err := c.db.QueryRow(context.Background(), `SELECT count(*), coalesce(max(ended_at - expires_at), '0')
		FROM sandboxes WHERE ended_as = 'EXPIRED'`).Scan(&n, &late); err != nil {
		c.t.Fatal(err)
	}
	c.t.Logf("expiry: %d sandboxes expired, the latest %v after its deadline", n, late.Round(time.Millisecond))
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

// auditActions are the audit log's names of the mutations the campaign's
// load makes.
var auditActions = map[string]string{
	"createInstance": "instance.create", "startInstance": "instance.start", "stopInstance": "instance.stop", "deleteInstance": "instance.delete",
	"createSandbox": "sandbox.create", "setSandboxTimeout": "sandbox.setTimeout", "pauseSandbox": "sandbox.pause",
	"resumeSandbox": "sandbox.resume", "deleteSandbox": "sandbox.delete", "updateSandboxTemplate": "sandboxTemplate.update",
}

// checkAudit counts the audit log's successful mutations of each kind the
// load makes: one per mutation the load saw accepted, and perhaps one for
// each whose answer was lost.
func (c *cluster) checkAudit(st loadStats) {
	c.t.Helper()
	for mutation := range st.byAction {
		if _, ok := auditActions[mutation]; !ok {
			c.t.Errorf("the load made %s, whose audit action is not known here", mutation)
		}
	}
	total := 0
	for mutation, action := range auditActions {
		n := c.count("audit_events WHERE outcome = 'success' AND action = $1", action)
		total += n
		if ok, lost := st.byAction[mutation], st.lostBy[mutation]; n < ok || n > ok+lost {
			c.t.Errorf("the audit log has %d successful %s; the load saw %d %s accepted and %d unanswered", n, action, ok, mutation, lost)
		}
	}
	c.t.Logf("audit: %d successful mutations; the load saw %d accepted (%v), %d unanswered", total, st.accepted, st.byAction, st.unanswered)
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
				if strings.Contains(line, s.id.String()) || strings.Contains(line, ids.Encode(ids.Instance, s.id)) {
					c.t.Logf("  %s: %s", p.name, line)
				}
			}
		}
	}
}
