package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
)

// campaignOps is how many operations the fault campaign makes:
// BC_CAMPAIGN_OPS, 1000 unless set (make campaign sets 10000).
func campaignOps(t testing.TB) int {
	s := os.Getenv("BC_CAMPAIGN_OPS")
	if s == "" {
		return 1000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("BC_CAMPAIGN_OPS=%q is not a positive number", s)
	}
	return n
}

const (
	// campaignRate is how many operations a second the campaign makes, so
	// that the faults fall among them rather than after them.
	campaignRate = 40
	// campaignWorkers make operations at once.
	campaignWorkers = 6
	// campaignLive bounds the instances alive at once: past it, creating
	// is deleting instead.
	campaignLive = 120
	// campaignSandboxShare is the share of operations on sandboxes (one
	// in campaignSandboxShare); campaignLiveSandboxes bounds the
	// sandboxes alive at once, as campaignLive the instances.
	campaignSandboxShare  = 4
	campaignLiveSandboxes = 30
	// campaignLongTimeout is a long-lived sandbox's timeout, in seconds:
	// past any campaign's end. A short-lived one's is 5 to 15 s, so it
	// expires during the campaign.
	campaignLongTimeout = 3600
)

// TestFaultCampaign runs random operations on instances of several
// tenants, in hosted and both providers' pools, and on their sandboxes
// (warm and cold, short- and long-lived, paused, resumed, deleted; their
// templates changed), through two serve processes, two reconcilers and
// ten hosts, while chaos kills and pauses them and restarts Redis and
// Postgres. Afterwards everything reached its desired state, nothing is
// left or duplicated, every warm pool is full of its template's current
// version, a subscriber that stayed connected saw every change, and the
// audit log has one row per accepted mutation. See docs/benchmarks.md for
// the long form's figures.
func TestFaultCampaign(t *testing.T) {
	t.Parallel()
	total := campaignOps(t)
	pg := startPostgres(t)
	hz, px := hetznerCloud(t), proxmoxCloud(t)
	var taps []*reportTap
	c := sandboxCluster(t, options{
		serves: 2, hosts: 10, reconcilers: 2, hostVcpus: 24,
		databaseURL: pg.url, reconcileArgs: providerArgs,
		hostServer: func(_ int, url string) string {
			tap := tapHost(t, url)
			taps = append(taps, tap)
			return tap.url
		},
	})
	c.cloudCatalog(hz, px)
	t.Cleanup(func() {
		if t.Failed() {
			c.explainUnsettled(hz, px)
		}
	})
	tenants := c.campaignTenants(3, hz, px)
	// On the serve process chaos never kills: it stays connected through
	// everything. The warm pools fill from now on, so it starts with the
	// instances there are.
	watcher := subscribe(t, c.urls[0], c.operator, map[string]any{"c": true})

	ops := runLoad(t, c, tenants, total)
	ch := newChaos(c, pg)
	ch.run(ops)
	ops.wait()
	ch.finish()

	st := ops.stats()
	t.Logf("operations: %d (accepted %d, refused %v, unanswered %d)", total, st.accepted, st.refused, st.unanswered)
	t.Logf("faults injected: %d (%v)", ch.total(), ch.injected)
	c.settle(3 * time.Minute)
	t.Logf("converged %v after the last fault", time.Since(ch.last).Round(time.Millisecond))
	// Then the short-lived sandboxes expire, so that no expiry changes
	// what the checks read.
	c.awaitExpiry(10 * time.Minute)
	c.settle(time.Minute)

	var templates []string
	for _, tn := range tenants {
		templates = append(templates, tn.templates...)
	}
	left := c.checkBooks(taps, hz, px) + c.checkSandboxBooks(templates)
	ops.checkSandboxes()
	c.checkDelivered(watcher)
	c.checkAudit(st)

	// Then everything goes, and nothing may stay behind.
	ops.deleteAll()
	c.settle(3 * time.Minute)
	left += c.checkBooks(taps, hz, px) + c.checkSandboxBooks(nil)
	var tokens []string
	for _, tn := range tenants {
		tokens = append(tokens, tn.token)
	}
	c.noLeaks(tokens...)
	t.Logf("left over or duplicated: %d", left)
}

// campaignTenant is a tenant of the campaign, the pools it creates
// instances in and its sandbox templates.
type campaignTenant struct {
	id, token string
	pools     []string
	templates []string
}

// campaignTenants makes n tenants, each with the hosted pool and a pool of
// its own on each cloud, and two sandbox templates on the hosted pool: one
// with 3 warm instances whose sandboxes live long unless told otherwise,
// and one without, whose sandboxes expire after 10 s unless told
// otherwise.
func (c *cluster) campaignTenants(n int, clouds ...*cloud) []*campaignTenant {
	c.t.Helper()
	out := []*campaignTenant{{id: c.tenant, token: c.member}}
	for i := 1; i < n; i++ {
		id, token := c.addTenant(fmt.Sprintf("tenant-%d", i))
		out = append(out, &campaignTenant{id: id, token: token})
	}
	for i, tn := range out {
		tn.pools = append(tn.pools, c.pool)
		for _, cl := range clouds {
			_, pool := c.providerPoolOf(tn.id, tn.token, cl, fmt.Sprintf("t%d-%s", i, strings.ToLower(cl.kind)), cl.credentials)
			tn.pools = append(tn.pools, pool)
		}
		tn.templates = []string{
			c.sandboxTemplateAs(tn.token, "warm", map[string]any{"warmCount": 3, "defaultTimeout": campaignLongTimeout, "maxTimeout": campaignLongTimeout}),
			c.sandboxTemplateAs(tn.token, "cold", map[string]any{"defaultTimeout": 10, "maxTimeout": campaignLongTimeout}),
		}
	}
	return out
}

// campaignLoad makes the campaign's operations from several goroutines, paced, and
// counts what the API answered.
type campaignLoad struct {
	t       testing.TB
	c       *cluster
	tenants []*campaignTenant
	total   int
	next    atomic.Int64
	done    atomic.Int64
	wg      sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
	pace    *time.Ticker

	mu sync.Mutex
	// live are the instances not deleted, by tenant index.
	live map[int][]string
	// sandboxes are the sandboxes not seen to end, by tenant index; made
	// every sandbox the load made.
	sandboxes map[int][]*campaignSandbox
	made      []*campaignSandbox
	// accepted counts the mutations answered without error, by action;
	// refused the errors, by code; unanswered the requests whose answer
	// was lost (the serve process died), by action: they may or may not
	// have been done.
	accepted   map[string]int
	refused    map[string]int
	unanswered map[string]int
}

// campaignSandbox is a sandbox the load made and what it asked of it.
type campaignSandbox struct {
	sandboxRef
	// desired is the state it was last asked for, RUNNING or PAUSED; ""
	// once the answer to a pause or resume was lost.
	desired string
	// deleted is set once a deleteSandbox of it was accepted; maybeDeleted
	// once one went unanswered.
	deleted, maybeDeleted bool
	// busy is set while an operation on it is under way: one at a time,
	// so that what it was asked last is known.
	busy bool
}

type loadStats struct {
	accepted   int
	byAction   map[string]int
	refused    map[string]int
	unanswered int
	// lostBy counts the unanswered requests by action.
	lostBy map[string]int
}

// The outcomes of a request besides a refusal's code: accepted, never
// sent, or sent and its answer lost.
const (
	outAccepted = ""
	outNotSent  = "connection refused"
	outLost     = "unanswered"
)

func runLoad(t testing.TB, c *cluster, tenants []*campaignTenant, total int) *campaignLoad {
	l := &campaignLoad{t: t, c: c, tenants: tenants, total: total, stop: make(chan struct{}),
		live: map[int][]string{}, sandboxes: map[int][]*campaignSandbox{},
		accepted: map[string]int{}, refused: map[string]int{}, unanswered: map[string]int{}}
	t.Cleanup(l.halt)
	pace := time.NewTicker(time.Second / campaignRate)
	for w := range campaignWorkers {
		l.wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for l.next.Add(1) <= int64(total) {
				select {
				case <-l.stop:
					return
				case <-pace.C:
				}
				l.op(rng)
				l.done.Add(1)
			}
		})
	}
	l.pace = pace
	return l
}

// progress is the share of operations done.
func (l *campaignLoad) progress() float64 { return float64(l.done.Load()) / float64(l.total) }

// finished reports whether every operation was made.
func (l *campaignLoad) finished() bool { return l.done.Load() >= int64(l.total) }

func (l *campaignLoad) wait() { l.wg.Wait(); l.pace.Stop() }

func (l *campaignLoad) halt() { l.once.Do(func() { close(l.stop) }); l.wait() }

const createQuery = `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`

// op makes one random operation as a random tenant at a random serve: on
// a sandbox one time in campaignSandboxShare, else on an instance.
func (l *campaignLoad) op(rng *rand.Rand) {
	ti := rng.IntN(len(l.tenants))
	url := l.c.urls[rng.IntN(len(l.c.urls))]
	if rng.IntN(campaignSandboxShare) == 0 {
		l.sandboxOp(rng, ti, url)
		return
	}
	l.instanceOp(rng, ti, url)
}

// instanceOp creates, starts, stops or deletes one of tenant ti's
// instances.
func (l *campaignLoad) instanceOp(rng *rand.Rand, ti int, url string) {
	tn := l.tenants[ti]
	l.mu.Lock()
	live := l.live[ti]
	var id string
	if len(live) > 0 {
		id = live[rng.IntN(len(live))]
	}
	nlive := 0
	for _, ids := range l.live {
		nlive += len(ids)
	}
	l.mu.Unlock()

	action := []string{"createInstance", "createInstance", "createInstance", "startInstance", "startInstance", "stopInstance", "stopInstance", "deleteInstance", "deleteInstance"}[rng.IntN(9)]
	if action == "createInstance" && nlive >= campaignLive || action != "createInstance" && id == "" {
		action = "createInstance"
		if id != "" {
			action = "deleteInstance"
		}
	}
	var a answer
	if action == "createInstance" {
		desired := []string{"RUNNING", "RUNNING", "STOPPED"}[rng.IntN(3)]
		in := map[string]any{"poolId": tn.pools[rng.IntN(len(tn.pools))], "flavorId": l.c.flavor, "imageId": l.c.image,
			"name": fmt.Sprintf("c-%d-%d", ti, rng.Uint64()), "sshKeys": []string{sshKey}, "desiredState": desired}
		a.data, a.errs, a.err = post(url, tn.token, createQuery, map[string]any{"in": in})
	} else {
		a.data, a.errs, a.err = post(url, tn.token, `mutation($id: ID!) { `+action+`(input: {id: $id}) { instance { id } } }`, map[string]any{"id": id})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count(action, id, a) != outAccepted {
		return
	}
	switch action {
	case "createInstance":
		made := a.data[action].(map[string]any)["instance"].(map[string]any)["id"].(string)
		l.live[ti] = append(l.live[ti], made)
	case "deleteInstance":
		l.live[ti] = slices.DeleteFunc(l.live[ti], func(v string) bool { return v == id })
	}
}

// sandboxOps are the operations on a sandbox, each as often as it comes.
var sandboxOps = []string{"createSandbox", "createSandbox", "createSandbox", "createSandbox", "setSandboxTimeout", "setSandboxTimeout",
	"pauseSandbox", "pauseSandbox", "resumeSandbox", "resumeSandbox", "deleteSandbox", "deleteSandbox"}

// sandboxOp creates (warm or cold, short- or long-lived), sets the
// timeout of, pauses, resumes or deletes one of tenant ti's sandboxes,
// or, one time in 25, changes one of its templates (which rolls its warm
// pool over).
func (l *campaignLoad) sandboxOp(rng *rand.Rand, ti int, url string) {
	tn := l.tenants[ti]
	if rng.IntN(25) == 0 {
		in := map[string]any{"id": tn.templates[rng.IntN(len(tn.templates))], "warmCount": rng.IntN(5),
			"env": []map[string]any{{"name": "V", "value": strconv.Itoa(rng.IntN(1000))}}}
		var a answer
		a.data, a.errs, a.err = post(url, tn.token, updateTemplateQuery, map[string]any{"in": in})
		l.mu.Lock()
		defer l.mu.Unlock()
		l.count("updateSandboxTemplate", in["id"].(string), a)
		return
	}
	action := sandboxOps[rng.IntN(len(sandboxOps))]
	l.mu.Lock()
	nlive := 0
	for _, ss := range l.sandboxes {
		nlive += len(ss)
	}
	if action == "createSandbox" && nlive >= campaignLiveSandboxes {
		action = "deleteSandbox"
	}
	var s *campaignSandbox
	if action != "createSandbox" {
		if s = l.idleSandbox(rng, ti); s == nil {
			action = "createSandbox"
		} else {
			s.busy = true
		}
	}
	l.mu.Unlock()

	var a answer
	switch action {
	case "createSandbox":
		in := map[string]any{"templateId": tn.templates[rng.IntN(len(tn.templates))], "metadata": map[string]any{"tenant": strconv.Itoa(ti)}}
		if timeout := campaignTimeout(rng); timeout > 0 {
			in["timeout"] = timeout
		}
		if rng.IntN(6) == 0 {
			// Env of its own: it boots cold even from a warm pool.
			in["env"] = []map[string]any{{"name": "OWN", "value": "1"}}
		}
		a.data, a.errs, a.err = post(url, tn.token, createSandboxQuery, map[string]any{"in": in})
	case "setSandboxTimeout":
		timeout := campaignTimeout(rng)
		if timeout == 0 {
			timeout = campaignLongTimeout
		}
		a.data, a.errs, a.err = postSandboxOp(url, tn.token, action, s.id, map[string]any{"timeout": timeout})
	default:
		a.data, a.errs, a.err = postSandboxOp(url, tn.token, action, s.id, nil)
	}
	l.recordSandbox(ti, action, s, a)
}

// campaignTimeout is a random sandbox timeout in seconds: 0 (the
// template's default), short (5 to 15) or long.
func campaignTimeout(rng *rand.Rand) int {
	return []int{0, 5 + rng.IntN(11), campaignLongTimeout}[rng.IntN(3)]
}

// idleSandbox is a random one of tenant ti's sandboxes not seen to end
// that no operation is under way on, or nil. l.mu is held.
func (l *campaignLoad) idleSandbox(rng *rand.Rand, ti int) *campaignSandbox {
	var idle []*campaignSandbox
	for _, s := range l.sandboxes[ti] {
		if !s.busy {
			idle = append(idle, s)
		}
	}
	if len(idle) == 0 {
		return nil
	}
	return idle[rng.IntN(len(idle))]
}

// recordSandbox counts the answer to action on sandbox s (nil for a
// create) of tenant ti and keeps track of the sandboxes and what they
// were asked.
func (l *campaignLoad) recordSandbox(ti int, action string, s *campaignSandbox, a answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := ""
	if s != nil {
		s.busy = false
		id = s.id
	}
	forget := func() {
		l.sandboxes[ti] = slices.DeleteFunc(l.sandboxes[ti], func(v *campaignSandbox) bool { return v == s })
	}
	switch outcome := l.count(action, id, a); {
	case outcome == outAccepted && action == "createSandbox":
		made := &campaignSandbox{sandboxRef: sandboxRefOf(a.data), desired: "RUNNING"}
		l.sandboxes[ti] = append(l.sandboxes[ti], made)
		l.made = append(l.made, made)
	case outcome == outAccepted && action == "pauseSandbox":
		s.desired = "PAUSED"
	case outcome == outAccepted && action == "resumeSandbox":
		s.desired = "RUNNING"
	case outcome == outAccepted && action == "deleteSandbox":
		s.deleted = true
		forget()
	case outcome == "FAILED_PRECONDITION" && s != nil:
		forget() // it ended: it expired
	case outcome == outLost && (action == "pauseSandbox" || action == "resumeSandbox"):
		s.desired = ""
	case outcome == outLost && action == "deleteSandbox":
		s.maybeDeleted = true
	}
}

// answer is what the API answered a request: its data and errors, or
// the error that lost it.
type answer struct {
	data map[string]any
	errs []map[string]any
	err  error
}

// count counts the answer to action (on the object id) and returns its
// outcome: outAccepted, outNotSent, outLost or the refusal's code. l.mu is
// held.
func (l *campaignLoad) count(action, id string, a answer) string {
	switch {
	case a.err != nil && errors.Is(a.err, syscall.ECONNREFUSED):
		l.refused[outNotSent]++
		return outNotSent
	case a.err != nil:
		l.unanswered[action]++
		return outLost
	case len(a.errs) > 0:
		code, _ := a.errs[0]["extensions"].(map[string]any)["code"].(string)
		l.refused[code]++
		if code == "INTERNAL" {
			l.t.Logf("%s %s: %v", action, id, a.errs)
		}
		return code
	}
	l.accepted[action]++
	return outAccepted
}

func (l *campaignLoad) stats() loadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := loadStats{byAction: maps.Clone(l.accepted), refused: maps.Clone(l.refused), lostBy: maps.Clone(l.unanswered)}
	for _, v := range l.accepted {
		st.accepted += v
	}
	for _, v := range l.unanswered {
		st.unanswered += v
	}
	return st
}

// checkSandboxes checks each sandbox the load made against what it asked,
// once the cluster settled: one whose delete was accepted ended; one
// ended DELETED was asked to be; one not ended is RUNNING or PAUSED as it
// was last asked; no two were given the same instance. Some started
// warm, some cold, and some expired.
func (l *campaignLoad) checkSandboxes() {
	c := l.c
	c.t.Helper()
	type row struct{ ended, state string }
	got := map[string]row{}
	rows, err := c.db.Query(context.Background(), "SELECT id, coalesce(ended_as, ''), state FROM sandbox_views")
	if err != nil {
		c.t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		var r row
		if err := rows.Scan(&id, &r.ended, &r.state); err != nil {
			c.t.Fatal(err)
		}
		got[ids.Encode(ids.Sandbox, id)] = r
	}
	if err := rows.Err(); err != nil {
		c.t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	holder := map[string]string{} // instance → sandbox
	from, ended := map[string]int{}, map[string]int{}
	for _, s := range l.made {
		from[s.startedFrom]++
		if other, ok := holder[s.instance]; ok {
			c.t.Errorf("sandboxes %s and %s were given the same instance %s", other, s.id, s.instance)
		}
		holder[s.instance] = s.id
		r, ok := got[s.id]
		switch {
		case !ok:
			c.t.Errorf("sandbox %s is not in the database", s.id)
		case r.ended == "DELETED" && !s.deleted && !s.maybeDeleted:
			c.t.Errorf("sandbox %s ended DELETED, but no delete of it was asked", s.id)
		case r.ended == "" && s.deleted:
			c.t.Errorf("sandbox %s is %s, but its delete was accepted", s.id, r.state)
		case r.ended == "" && s.desired != "" && r.state != s.desired:
			c.t.Errorf("sandbox %s is %s, but was last asked to be %s", s.id, r.state, s.desired)
		}
		ended[cmp.Or(r.ended, "not ended")]++
	}
	c.t.Logf("sandboxes: %d made (started %v), %d in the database; %v", len(l.made), from, len(got), ended)
	if len(l.made) >= 50 && (from["WARM"] == 0 || from["COLD"] == 0 || ended["EXPIRED"] == 0) {
		c.t.Errorf("of %d sandboxes, %d started WARM, %d COLD and %d expired: the campaign missed a path", len(l.made), from["WARM"], from["COLD"], ended["EXPIRED"])
	}
}

// deleteAll deletes every sandbox not ended, then every sandbox template
// (and so its warm pool), then every instance not deleted, through the
// first serve process, which chaos left alone. It reads them from the
// database: a create whose answer was lost made one the load does not
// know of.
func (l *campaignLoad) deleteAll() {
	tokens := map[uuid.UUID]string{}
	for _, tn := range l.tenants {
		id, _ := ids.Decode(ids.Tenant, tn.id)
		tokens[id] = tn.token
	}
	for _, del := range []struct {
		mutation string
		kind     ids.Kind
		query    string
	}{
		{"deleteSandbox", ids.Sandbox, "SELECT id, tenant_id FROM sandboxes WHERE ended_as IS NULL"},
		{"deleteSandboxTemplate", ids.SandboxTemplate, "SELECT id, tenant_id FROM sandbox_templates WHERE deleted_at IS NULL"},
		{"deleteInstance", ids.Instance, "SELECT id, tenant_id FROM instances WHERE desired_state <> 'DELETED' AND sandbox_id IS NULL AND warm_template_id IS NULL"},
	} {
		for _, o := range l.owned(del.query) {
			id := ids.Encode(del.kind, o.id)
			_, errs, err := post(l.c.urls[0], tokens[o.tenant], `mutation($id: ID!) { `+del.mutation+`(input: {id: $id}) { __typename } }`, map[string]any{"id": id})
			if err != nil || len(errs) > 0 {
				l.t.Errorf("%s %s: %v %v", del.mutation, id, err, errs)
			}
		}
	}
}

// owned is what query, selecting an ID and a tenant ID, reads.
func (l *campaignLoad) owned(query string) []struct{ id, tenant uuid.UUID } {
	rows, err := l.c.db.Query(context.Background(), query)
	if err != nil {
		l.t.Fatal(err)
	}
	var out []struct{ id, tenant uuid.UUID }
	for rows.Next() {
		var o struct{ id, tenant uuid.UUID }
		if err := rows.Scan(&o.id, &o.tenant); err != nil {
			l.t.Fatal(err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}
