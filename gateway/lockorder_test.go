package gateway_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// TestReportLockOrder: a report arriving while the reconciler holds an
// instance's row, and before the reconciler bumps the host's generation,
// waits for the reconciler instead of deadlocking with it. (Reports used
// to lock the host's row first.)
func TestReportLockOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := e.place("running")
	ctx := context.Background()

	// The reconciler's step: the instance's row, then (below) its host's.
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM instances WHERE id = $1 FOR UPDATE", e.instance); err != nil {
		t.Fatal(err)
	}

	reported := make(chan int, 1)
	go func() {
		resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: gen,
			Instances: []hostproto.InstanceStatus{{ID: ids.Encode(ids.Instance, e.instance), State: hostproto.StateRunning}}})
		io.Copy(io.Discard, resp.Body)
		reported <- resp.StatusCode
	}()
	// Wait until the report's transaction waits on the instance's row.
	testenv.Eventually(t, 5*time.Second, "the report to wait on the instance's row", func() bool {
		var waiting int
		e.db.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&waiting)
		return waiting > 0
	})
	if _, err := tx.Exec(ctx, "UPDATE hosts SET spec_generation = spec_generation + 1 WHERE id = $1", e.host); err != nil {
		t.Fatalf("bump the host's generation: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if code := <-reported; code != 204 {
		t.Fatalf("report answered %d", code)
	}
}
