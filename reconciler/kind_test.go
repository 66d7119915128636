package reconciler_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/sqlc"
)

// recorder is a reconciler kind that keeps the requests it is given.
type recorder struct {
	mu   sync.Mutex
	reqs []reconciler.Request
}

func (k *recorder) Reconcile(_ context.Context, req reconciler.Request) (reconciler.Result, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reqs = append(k.reqs, req)
	return reconciler.Result{}, nil
}

func (k *recorder) seen() []reconciler.Request {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.reqs)
}

// TestKinds: a second kind registered on its own topic receives the work
// of that topic, and nothing else; vps.instances still gets its own; an
// entry of a topic nobody registered is dead-lettered, not lost.
func TestKinds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.host("h1", 8)
	fake := &recorder{}
	e.run(func(r *reconciler.Reconciler) { r.Register("test.fake", fake) })

	var keys []string
	for range 3 {
		id := uuid.New()
		keys = append(keys, id.String())
		e.check(sqlc.New(e.db).InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: "test.fake", Key: id}))
	}
	e.check(sqlc.New(e.db).InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: "test.unknown", Key: uuid.New()}))
	inst := e.create("vm")

	testenv.Eventually(t, 10*time.Second, "the fake kind to see its three keys", func() bool { return len(fake.seen()) >= 3 })
	testenv.Eventually(t, 10*time.Second, "the instance to be placed", func() bool {
		got, err := sqlc.New(e.db).GetInstance(e.ctx, inst)
		return err == nil && got.State != string(lifecycle.Pending)
	})
	testenv.Eventually(t, 10*time.Second, "the unknown topic's entry to be dead-lettered", func() bool {
		n, _ := e.rdb.XLen(e.ctx, e.prefix+"work:dead").Result()
		return n == 1
	})
	var got []string
	for _, req := range fake.seen() {
		if req.Topic != "test.fake" {
			t.Fatalf("the fake kind was given a request of topic %s", req.Topic)
		}
		got = append(got, req.Key)
	}
	slices.Sort(got)
	slices.Sort(keys)
	if !slices.Equal(got, keys) {
		t.Fatalf("the fake kind saw %v, want exactly %v", got, keys)
	}
}

// TestKindResults: a kind's Result and errors decide what happens to its
// key next: Requeue runs it again, an error is retried, a terminal error
// is not.
func TestKindResults(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	calls := map[string]int{}
	kind := reconciler.KindFunc(func(_ context.Context, req reconciler.Request) (reconciler.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[req.Key]++
		n := calls[req.Key]
		switch req.Key {
		case requeue.String():
			return reconciler.Result{Requeue: n < 3}, nil
		case failing.String():
			if n < 3 {
				return reconciler.Result{}, context.DeadlineExceeded
			}
			return reconciler.Result{}, nil
		case terminal.String():
			return reconciler.Result{}, reconciler.Terminal(context.Canceled)
		}
		return reconciler.Result{}, nil
	})
	e.run(func(r *reconciler.Reconciler) { r.Register("test.results", kind) })
	for _, id := range []uuid.UUID{requeue, failing, terminal} {
		e.check(sqlc.New(e.db).InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: "test.results", Key: id}))
	}
	count := func(id uuid.UUID) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[id.String()]
	}
	testenv.Eventually(t, 10*time.Second, "three passes of the requeued and the failing keys", func() bool {
		return count(requeue) == 3 && count(failing) == 3 && count(terminal) == 1
	})
	testenv.Eventually(t, 10*time.Second, "every entry acknowledged", func() bool {
		p, err := e.rdb.XPending(e.ctx, e.prefix+"work", "reconcilers").Result()
		return err == nil && p.Count == 0
	})
	if n := count(terminal); n != 1 {
		t.Fatalf("a terminal error was retried: %d calls", n)
	}
}

var (
	requeue  = uuid.MustParse("00000000-0000-0000-0000-000000000001")
	failing  = uuid.MustParse("00000000-0000-0000-0000-000000000002")
	terminal = uuid.MustParse("00000000-0000-0000-0000-000000000003")
)

// TestEvery: periodic work runs once per interval across reconcilers.
func TestEvery(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const interval = 300 * time.Millisecond
	var mu sync.Mutex
	var runs []time.Time
	job := func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, time.Now())
		return nil
	}
	for range 3 {
		e.run(func(r *reconciler.Reconciler) { r.Every("test.job", interval, job) })
	}
	testenv.Eventually(t, 10*time.Second, "five runs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) >= 5
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(runs); i++ {
		// The database's clock decides; allow for the two clocks' reading.
		if gap := runs[i].Sub(runs[i-1]); gap < interval-50*time.Millisecond {
			t.Fatalf("runs %d and %d were %v apart; the interval is %v", i-1, i, gap, interval)
		}
	}
}
