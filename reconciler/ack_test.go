package reconciler_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/sqlc"
)

// TestAcksGathered: the stream entries of reconciles that end together are
// acknowledged in a few XACKs, not one each, and all of them.
func TestAcksGathered(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 20
	var (
		mu      sync.Mutex
		seen    = map[string]bool{}
		allSeen = make(chan struct{})
	)
	// Each reconcile ends once all n are under way, so their acknowledgements
	// come together.
	kind := reconciler.KindFunc(func(ctx context.Context, req reconciler.Request) (reconciler.Result, error) {
		mu.Lock()
		seen[req.Key] = true
		if len(seen) == n {
			close(allSeen)
		}
		mu.Unlock()
		select {
		case <-allSeen:
			return reconciler.Result{}, nil
		case <-ctx.Done():
			return reconciler.Result{}, ctx.Err()
		}
	})
	acks := &xacks{}
	rdb := redis.NewClient(e.rdb.Options())
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(acks)
	e.start(func(c *reconciler.Config) { c.Redis, c.Workers = rdb, n }, func(r *reconciler.Reconciler) { r.Register("test.acks", kind) })

	e.check(pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error {
		for range n {
			if err := sqlc.New(tx).InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: "test.acks", Key: uuid.New()}); err != nil {
				return err
			}
		}
		return nil
	}))
	testenv.Eventually(t, 10*time.Second, "every entry acknowledged", func() bool {
		p, err := e.rdb.XPending(e.ctx, e.prefix+"work", "reconcilers").Result()
		return err == nil && p.Count == 0 && acks.entries() == n
	})
	if calls := acks.calls(); calls > n/4 {
		t.Fatalf("%d entries acknowledged in %d XACKs, want %d at the most", n, calls, n/4)
	}
}

// TestAcksAtStop: a reconciler that stops right after a reconcile still
// acknowledges its entry, so it is not delivered again.
func TestAcksAtStop(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reconciled := make(chan struct{}, 1)
	kind := reconciler.KindFunc(func(context.Context, reconciler.Request) (reconciler.Result, error) {
		select {
		case reconciled <- struct{}{}:
		default:
		}
		return reconciler.Result{}, nil
	})
	_, stop := e.start(nil, func(r *reconciler.Reconciler) { r.Register("test.acks", kind) })
	e.check(sqlc.New(e.db).InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: "test.acks", Key: uuid.New()}))
	select {
	case <-reconciled:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the reconcile")
	}
	stop()
	p, err := e.rdb.XPending(e.ctx, e.prefix+"work", "reconcilers").Result()
	e.check(err)
	if p.Count != 0 {
		t.Fatalf("%d entries left pending by a reconciler that stopped after their reconcile", p.Count)
	}
}

// xacks counts the XACK commands of a Redis client and the entries they
// acknowledge.
type xacks struct {
	mu     sync.Mutex
	n, ids int
}

func (x *xacks) DialHook(next redis.DialHook) redis.DialHook { return next }

func (x *xacks) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		x.count(cmd)
		return next(ctx, cmd)
	}
}

func (x *xacks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			x.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (x *xacks) count(cmd redis.Cmder) {
	if cmd.Name() != "xack" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.n++
	x.ids += len(cmd.Args()) - 3 // XACK key group id…
}

func (x *xacks) calls() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.n
}

func (x *xacks) entries() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.ids
}
