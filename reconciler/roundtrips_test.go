package reconciler_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/sqlc"
)

// TestStepReadsWithItsLock: an instance's steps from PENDING to RUNNING
// read its host's liveness and its addresses with its row lock, not in
// round trips of their own (HostLiveness, ListLiveLeases).
func TestStepReadsWithItsLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.host("hv-1", 4)
	id := e.create("vm")
	names := &queryNames{n: map[string]int{}}
	cfg := e.db.Config()
	cfg.ConnConfig.Tracer = names
	db, err := pgxpool.NewWithConfig(context.Background(), cfg)
	e.check(err)
	t.Cleanup(db.Close)
	e.start(func(c *reconciler.Config) { c.DB, c.HostSilentAfter = db, time.Hour }, nil)

	e.eventually(10*time.Second, "the instance PROVISIONING", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'PROVISIONING'", id) == 1
	})
	_, err = e.db.Exec(e.ctx, "UPDATE instances SET observed_state = 'running' WHERE id = $1", id)
	e.check(err)
	e.check(sqlc.New(e.db).InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: vps.TopicInstances, Key: id}))
	e.eventually(10*time.Second, "the instance RUNNING", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'RUNNING' AND mac IS NOT NULL", id) == 1
	})
	for _, q := range []string{"HostLiveness", "ListLiveLeases"} {
		if n := names.get(q); n != 0 {
			t.Errorf("%s ran %d times", q, n)
		}
	}
	if names.get("LockInstanceStep") < 2 {
		t.Errorf("LockInstanceStep ran %d times, want 2 or more", names.get("LockInstanceStep"))
	}
}

// queryNames counts the statements of a pool by their sqlc name.
type queryNames struct {
	mu sync.Mutex
	n  map[string]int
}

func (q *queryNames) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if name, ok := strings.CutPrefix(data.SQL, "-- name: "); ok {
		name, _, _ = strings.Cut(name, " ")
		q.mu.Lock()
		q.n[name]++
		q.mu.Unlock()
	}
	return ctx
}

func (q *queryNames) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (q *queryNames) get(name string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n[name]
}
