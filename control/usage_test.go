package control_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
)

// TestUsageTotalsBounded: a usage query that would return more totals than
// the service allows is INVALID_INPUT naming the limit; one within it is
// answered.
func TestUsageTotalsBounded(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	svc := control.New(db, control.Config{MaxUsageTotals: 2})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for range 3 {
		if _, err := db.Exec(ctx, `INSERT INTO usage_records (instance_id, interval_start, interval_end, tenant_id, pool_id, flavor_id,
			running_seconds, paused_seconds, stopped_seconds, other_seconds, vcpus, memory_mb, disk_gb, gpu_count)
			VALUES ($1, $2, $3, $4, $4, $4, 300, 0, 0, 0, 1, 1024, 10, 0)`, uuid.New(), day, day.Add(5*time.Minute), uuid.New()); err != nil {
			t.Fatal(err)
		}
	}
	q := control.UsageQuery{From: day, To: day.Add(time.Hour), GroupBy: []control.UsageGroup{control.ByInstance}}
	_, err := svc.Usage(ctx, q)
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidInput || e.Limit != "totals" {
		t.Fatalf("3 totals of at most 2: %v, want INVALID_INPUT on the totals limit", err)
	}
	q.GroupBy = nil
	if got, err := svc.Usage(ctx, q); err != nil || len(got) != 1 || got[0].RunningSeconds != 900 {
		t.Fatalf("one total: %+v, %v", got, err)
	}
}
