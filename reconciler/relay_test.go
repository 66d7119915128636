package reconciler_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/internal/testenv"
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
	sub := e.rdb.Subscribe(e.ctx, e.prefix+channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(e.ctx); err != nil { // the subscription is in place
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string][]int{}
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range sub.Channel() {
			var ev struct {
				Key     string `json:"key"`
				Version int    `json:"version"`
			}
			json.Unmarshal([]byte(msg.Payload), &ev)
			mu.Lock()
			got[ev.Key] = append(got[ev.Key], ev.Version)
			n++
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { sub.Close(); <-done })
	received := func() int { mu.Lock(); defer mu.Unlock(); return n }

	// Each transaction commits one more version of every instance, as
	// changes of several instances interleave.
	ids := make([]uuid.UUID, keys)
	for i := range ids {
		ids[i] = uuid.New()
	}
	ch := channel
	for v := 1; v <= perKey; v++ {
		e.check(pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error {
			q := sqlc.New(tx)
			for _, id := range ids {
				payload, _ := json.Marshal(map[string]any{"key": id.String(), "version": v})
				if err := q.InsertOutbox(e.ctx, sqlc.InsertOutboxParams{Topic: reconciler.TopicEvents, Key: id, Channel: &ch, Payload: payload}); err != nil {
					return err
				}
			}
			return nil
		}))
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
	mu.Lock()
	defer mu.Unlock()
	for key, versions := range got {
		for i := 1; i < len(versions); i++ {
			if versions[i] <= versions[i-1] {
				t.Fatalf("instance %s: version %d published after %d (%s)", key, versions[i], versions[i-1], around(versions, i))
			}
		}
	}
}

func around(vs []int, i int) string {
	return fmt.Sprint(vs[max(0, i-3):min(len(vs), i+3)])
}
