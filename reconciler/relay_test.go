package reconciler_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/sqlc"
)

// TestRelayKeepsEachInstancesOrder: the events of one instance are
// published in the order they were committed, even while a relay that
// claimed the oldest of them stalls (slow, or killed before Postgres
// noticed): another relay must not publish the later ones first, since a
// subscriber drops an older version that comes after a newer one, and so
// loses that change.
func TestRelayKeepsEachInstancesOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const channel, keys, perKey, stalled = "events:relay-order", 3, 20, 5
	pub := e.subscribe(channel)
	received := pub.count

	// Each transaction commits one more version of every instance, as
	// changes of several instances interleave.
	ids := make([]uuid.UUID, keys)
	for i := range ids {
		ids[i] = uuid.New()
	}
	for v := 1; v <= perKey; v++ {
		e.writeEvents(channel, v, 0, ids...)
	}
	// A relay claimed the oldest rows and stalls holding them.
	stall, err := e.db.Begin(e.ctx)
	e.check(err)
	defer stall.Rollback(e.ctx)
	_, err = stall.Exec(e.ctx, "SELECT id FROM outbox ORDER BY id LIMIT $1 FOR UPDATE", stalled*keys)
	e.check(err)

	// A connection of its own: the relays may hold all of the pool's.
	watch, err := pgx.ConnectConfig(e.ctx, e.db.Config().ConnConfig)
	e.check(err)
	defer watch.Close(e.ctx)

	e.reconcilers(2, nil)
	// The others either wait for the stalled claim or (the fault) publish
	// past it.
	testenv.Eventually(t, 30*time.Second, "a relay waiting for the stalled claim, or publishing past it", func() bool {
		var waiting int
		e.check(watch.QueryRow(e.ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&waiting))
		return waiting > 0 || received() > 0
	})
	e.check(stall.Rollback(e.ctx))
	testenv.Eventually(t, 30*time.Second, "every event published", func() bool { return received() >= keys*perKey })
	pub.inOrder(t)
}

func around(vs []int, i int) string {
	return fmt.Sprint(vs[max(0, i-3):min(len(vs), i+3)])
}

// published is what a Redis subscriber of one channel received: each
// event's versions, by key, in the order they came.
type published struct {
	mu  sync.Mutex
	got map[string][]int
	n   int
}

// subscribe collects the events published on channel until the test ends.
func (e *env) subscribe(channel string) *published {
	e.t.Helper()
	sub := e.rdb.Subscribe(e.ctx, e.prefix+channel)
	if _, err := sub.Receive(e.ctx); err != nil { // the subscription is in place
		sub.Close()
		e.t.Fatal(err)
	}
	p := &published{got: map[string][]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range sub.Channel() {
			var ev struct {
				Key     string `json:"key"`
				Version int    `json:"version"`
			}
			json.Unmarshal([]byte(msg.Payload), &ev)
			p.mu.Lock()
			p.got[ev.Key] = append(p.got[ev.Key], ev.Version)
			p.n++
			p.mu.Unlock()
		}
	}()
	e.t.Cleanup(func() { sub.Close(); <-done })
	return p
}

// count is how many events came.
func (p *published) count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.n }

// has reports whether version v of key came.
func (p *published) has(key uuid.UUID, v int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.got[key.String()], v)
}

// inOrder fails t unless each key's versions came in increasing order,
// none twice.
func (p *published) inOrder(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, versions := range p.got {
		for i := 1; i < len(versions); i++ {
			if versions[i] <= versions[i-1] {
				t.Fatalf("instance %s: version %d published after %d (%s)", key, versions[i], versions[i-1], around(versions, i))
			}
		}
	}
}

// writeEvents commits, in one transaction, version v of each key's event
// on channel, padded with pad bytes.
func (e *env) writeEvents(channel string, v, pad int, keys ...uuid.UUID) {
	e.t.Helper()
	e.check(pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		for _, key := range keys {
			payload, _ := json.Marshal(map[string]any{"key": key.String(), "version": v, "pad": strings.Repeat("x", pad)})
			if err := q.InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: reconciler.TopicEvents, Key: key, Channel: &channel, Payload: payload}); err != nil {
				return err
			}
		}
		return nil
	}))
}

// relayed is how many outbox rows r handed to Redis by path (notified,
// claimed).
func relayed(t *testing.T, r *reconciler.Reconciler, path string) float64 {
	return testenv.Metric(t, r.Collectors(), "bc_relay_rows_total", map[string]string{"path": path})
}

// leads reports whether r leads the relays.
func leads(t *testing.T, r *reconciler.Reconciler) bool {
	return testenv.Metric(t, r.Collectors(), "bc_relay_leader", nil) == 1
}

// TestRelayFetchesLargeRows: a row too large for its notification is
// read by id by the leader and published in its place, before the rows
// committed after it.
func TestRelayFetchesLargeRows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const channel, versions = "events:relay-large", 30
	pub := e.subscribe(channel)
	r, _ := e.start(nil, nil)
	testenv.Eventually(t, 10*time.Second, "the relay leads", func() bool { return leads(t, r) })
	key := uuid.New()
	for v := 1; v <= versions; v++ {
		pad := 0
		if v%3 == 0 {
			pad = 9000 // past the 8000 bytes a notification carries
		}
		e.writeEvents(channel, v, pad, key)
	}
	testenv.Eventually(t, 10*time.Second, "every version published", func() bool { return pub.has(key, versions) })
	pub.inOrder(t)
	if n := pub.count(); n != versions {
		t.Fatalf("published %d events, want %d", n, versions)
	}
	if n, c := relayed(t, r, "notified"), relayed(t, r, "claimed"); n != versions || c != 0 {
		t.Fatalf("relayed %v from notifications and %v by claims, want %d and 0", n, c, versions)
	}
}

// TestRelayNotifiesWorkRows: a work row, which has no channel and no
// payload, reaches the work stream from its notification as an event row
// does, not by a claim seconds later.
func TestRelayNotifiesWorkRows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r, _ := e.start(nil, nil)
	testenv.Eventually(t, 10*time.Second, "the relay leads", func() bool { return leads(t, r) })
	keys := []uuid.UUID{uuid.New(), uuid.New()}
	e.check(events.Wake(e.ctx, sqlc.New(e.db), keys))
	testenv.Eventually(t, 10*time.Second, "both rows relayed", func() bool {
		return relayed(t, r, "notified")+relayed(t, r, "claimed") >= float64(len(keys))
	})
	if n, c := relayed(t, r, "notified"), relayed(t, r, "claimed"); n != float64(len(keys)) || c != 0 {
		t.Fatalf("relayed %v from notifications and %v by claims, want %d and 0", n, c, len(keys))
	}
	entries, err := e.rdb.XRange(e.ctx, e.prefix+"work", "-", "+").Result()
	e.check(err)
	var got []string
	for _, m := range entries {
		if m.Values["topic"] == vps.TopicInstances {
			got = append(got, fmt.Sprint(m.Values["key"]))
		}
	}
	if want := []string{keys[0].String(), keys[1].String()}; !slices.Equal(got, want) {
		t.Fatalf("work stream has %v for %s, want %v", got, vps.TopicInstances, want)
	}
}

// TestRelayLeader: of two relays only one publishes from notifications,
// every row once and in order; when its connection dies a relay leads
// again, and when the leader stops the other takes over.
func TestRelayLeader(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const channel, versions = "events:relay-leader", 10
	pub := e.subscribe(channel)
	a, stopA := e.start(nil, nil)
	b, stopB := e.start(nil, nil)
	leader := func() (lead, follow *reconciler.Reconciler, stop func()) {
		var got []*reconciler.Reconciler
		testenv.Eventually(t, 10*time.Second, "one relay leading", func() bool {
			got = got[:0]
			for _, r := range []*reconciler.Reconciler{a, b} {
				if leads(t, r) {
					got = append(got, r)
				}
			}
			return len(got) == 1
		})
		if got[0] == a {
			return a, b, stopA
		}
		return b, a, stopB
	}
	keys := []uuid.UUID{uuid.New(), uuid.New()}
	// round writes versions from..from+versions-1 of both keys and waits
	// for them, checking that lead published them from their
	// notifications.
	round := func(lead *reconciler.Reconciler, from int) {
		t.Helper()
		before := relayed(t, lead, "notified")
		for v := from; v < from+versions; v++ {
			e.writeEvents(channel, v, 0, keys...)
		}
		testenv.Eventually(t, 10*time.Second, "every version published", func() bool {
			return pub.has(keys[0], from+versions-1) && pub.has(keys[1], from+versions-1)
		})
		if n := relayed(t, lead, "notified") - before; n != 2*versions {
			t.Fatalf("the leader published %v rows from notifications, want %d", n, 2*versions)
		}
	}
	var leadPid int
	lockHolder := func() int {
		var pid int
		err := e.db.QueryRow(e.ctx, `SELECT coalesce(max(pid), 0) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND objsubid = 1 AND objid = $1`, reconciler.LeadLock).Scan(&pid)
		e.check(err)
		return pid
	}

	lead, follow, _ := leader()
	round(lead, 1)
	if n := relayed(t, follow, "notified"); n != 0 {
		t.Fatalf("the follower published %v rows from notifications", n)
	}

	t.Log("the leader's connection dies")
	leadPid = lockHolder()
	_, err := e.db.Exec(e.ctx, "SELECT pg_terminate_backend($1)", leadPid)
	e.check(err)
	testenv.Eventually(t, 10*time.Second, "a relay leading again", func() bool {
		pid := lockHolder()
		return pid != 0 && pid != leadPid
	})
	lead, _, stop := leader()
	round(lead, 1+versions)

	t.Log("the leader stops")
	stop()
	other := a
	if lead == a {
		other = b
	}
	testenv.Eventually(t, 10*time.Second, "the other relay leading", func() bool { return leads(t, other) })
	round(other, 1+2*versions)

	pub.inOrder(t)
	if n := pub.count(); n != 3*versions*len(keys) {
		t.Fatalf("published %d events, want %d", n, 3*versions*len(keys))
	}
}

// TestRelayLeavesNothing: after writers race each other and the leader's
// connection dies among them, every row was published and none is left
// in the outbox.
func TestRelayLeavesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const channel, writers, versions = "events:relay-churn", 6, 40
	pub := e.subscribe(channel)
	e.reconcilers(2, nil)
	keys := make([]uuid.UUID, writers)
	var wg sync.WaitGroup
	for w := range writers {
		keys[w] = uuid.New()
		wg.Go(func() {
			for v := 1; v <= versions; v++ {
				pad := 0
				if v%7 == 0 {
					pad = 9000
				}
				e.writeEvents(channel, v, pad, keys[w])
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, "some events published", func() bool { return pub.count() > writers })
	_, err := e.db.Exec(e.ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND objid = $1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, reconciler.LeadLock)
	e.check(err)
	wg.Wait()
	testenv.Eventually(t, 30*time.Second, "every version published, the outbox empty", func() bool {
		for _, key := range keys {
			for v := 1; v <= versions; v++ {
				if !pub.has(key, v) {
					return false
				}
			}
		}
		var left int
		e.check(e.db.QueryRow(e.ctx, "SELECT count(*) FROM outbox").Scan(&left))
		return left == 0
	})
}
