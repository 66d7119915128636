package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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
)

// TestFaultCampaign runs random operations on instances of several
// tenants, in hosted and both providers' pools, through two serve
// processes, two reconcilers and ten hosts, while chaos kills and pauses
// them and restarts Redis and Postgres. Afterwards everything reached its
// desired state, nothing is left or duplicated, a subscriber that stayed
// connected saw every change, and the audit log has one row per accepted
// mutation. See docs/benchmarks.md for the long form's figures.
func TestFaultCampaign(t *testing.T) {
	t.Parallel()
	total := campaignOps(t)
	pg := startPostgres(t)
	hz, px := hetznerCloud(t), proxmoxCloud(t)
	var taps []*reportTap
	c := start(t, options{
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
	// everything.
	watcher := subscribe(t, c.urls[0], c.operator, nil)

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

	left := c.checkBooks(taps, hz, px)
	c.checkDelivered(watcher)
	c.checkAudit(st)

	// Then everything goes, and nothing may stay behind.
	ops.deleteAll()
	c.settle(3 * time.Minute)
	left += c.checkBooks(taps, hz, px)
	var tokens []string
	for _, tn := range tenants {
		tokens = append(tokens, tn.token)
	}
	c.noLeaks(tokens...)
	t.Logf("left over or duplicated: %d", left)
}

// campaignTenant is a tenant of the campaign and the pools it creates in.
type campaignTenant struct {
	id, token string
	pools     []string
}

// campaignTenants makes n tenants, each with the hosted pool and a pool of
// its own on each cloud.
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
	// accepted counts the mutations answered without error, by action;
	// refused the errors, by code; unanswered the requests whose answer
	// was lost (the serve process died): they may or may not have been
	// done.
	accepted   map[string]int
	refused    map[string]int
	unanswered int
}

type loadStats struct {
	accepted   int
	byAction   map[string]int
	refused    map[string]int
	unanswered int
}

func runLoad(t testing.TB, c *cluster, tenants []*campaignTenant, total int) *campaignLoad {
	l := &campaignLoad{t: t, c: c, tenants: tenants, total: total, stop: make(chan struct{}),
		live: map[int][]string{}, accepted: map[string]int{}, refused: map[string]int{}}
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

// op makes one random operation as a random tenant at a random serve.
func (l *campaignLoad) op(rng *rand.Rand) {
	ti := rng.IntN(len(l.tenants))
	tn := l.tenants[ti]
	url := l.c.urls[rng.IntN(len(l.c.urls))]
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
	var data map[string]any
	var errs []map[string]any
	var err error
	if action == "createInstance" {
		desired := []string{"RUNNING", "RUNNING", "STOPPED"}[rng.IntN(3)]
		in := map[string]any{"poolId": tn.pools[rng.IntN(len(tn.pools))], "flavorId": l.c.flavor, "imageId": l.c.image,
			"name": fmt.Sprintf("c-%d-%d", ti, rng.Uint64()), "sshKeys": []string{sshKey}, "desiredState": desired}
		data, errs, err = post(url, tn.token, createQuery, map[string]any{"in": in})
	} else {
		data, errs, err = post(url, tn.token, `mutation($id: ID!) { `+action+`(input: {id: $id}) { instance { id } } }`, map[string]any{"id": id})
	}
	l.record(ti, action, id, data, errs, err)
}

// record counts an answer and keeps track of the instances alive.
func (l *campaignLoad) record(ti int, action, id string, data map[string]any, errs []map[string]any, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil && errors.Is(err, syscall.ECONNREFUSED):
		l.refused["connection refused"]++ // never sent
	case err != nil:
		l.unanswered++
	case len(errs) > 0:
		code, _ := errs[0]["extensions"].(map[string]any)["code"].(string)
		l.refused[code]++
		if code == "INTERNAL" {
			l.t.Logf("%s %s: %v", action, id, errs)
		}
	default:
		l.accepted[action]++
		switch action {
		case "createInstance":
			made := data[action].(map[string]any)["instance"].(map[string]any)["id"].(string)
			l.live[ti] = append(l.live[ti], made)
		case "deleteInstance":
			for i, v := range l.live[ti] {
				if v == id {
					l.live[ti] = append(l.live[ti][:i], l.live[ti][i+1:]...)
					break
				}
			}
		}
	}
}

func (l *campaignLoad) stats() loadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := loadStats{byAction: map[string]int{}, refused: map[string]int{}, unanswered: l.unanswered}
	for k, v := range l.accepted {
		st.byAction[k], st.accepted = v, st.accepted+v
	}
	for k, v := range l.refused {
		st.refused[k] = v
	}
	return st
}

// deleteAll deletes every instance not deleted, through the first serve
// process, which chaos left alone. It reads them from the database: a
// create whose answer was lost made one the load does not know of.
func (l *campaignLoad) deleteAll() {
	tokens := map[uuid.UUID]string{}
	for _, tn := range l.tenants {
		id, _ := ids.Decode(ids.Tenant, tn.id)
		tokens[id] = tn.token
	}
	rows, err := l.c.db.Query(context.Background(), "SELECT id, tenant_id FROM instances WHERE desired_state <> 'DELETED'")
	if err != nil {
		l.t.Fatal(err)
	}
	type inst struct{ id, tenant uuid.UUID }
	var todo []inst
	for rows.Next() {
		var in inst
		if err := rows.Scan(&in.id, &in.tenant); err != nil {
			l.t.Fatal(err)
		}
		todo = append(todo, in)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	for _, in := range todo {
		id := ids.Encode(ids.Instance, in.id)
		_, errs, err := post(l.c.urls[0], tokens[in.tenant], `mutation($id: ID!) { deleteInstance(input: {id: $id}) { instance { id } } }`, map[string]any{"id": id})
		if err != nil || len(errs) > 0 {
			l.t.Errorf("delete %s: %v %v", id, err, errs)
		}
	}
}
