package reconciler

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
)

// TestWorkStreamMetrics: the work stream's gauges say how many entries
// wait unread (lag), how many are read and unacknowledged (pending), and
// how many were dead-lettered, as Redis holds them at the scrape.
func TestWorkStreamMetrics(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	t.Cleanup(func() { rdb.Del(ctx, prefix+"work", prefix+"work:dead") })
	r := New(Config{DB: testenv.DB(t), Redis: rdb, Prefix: prefix, Consumer: "one", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := r.stream.ensureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.stream.add(ctx, vps.TopicInstances, "k1", "k2", "k3", "k4"); err != nil {
		t.Fatal(err)
	}
	metric := func(name string) float64 { return testenv.Metric(t, r.Collectors(), name, nil) }
	if l, lag, p := metric("bc_work_stream_length"), metric("bc_work_stream_lag"), metric("bc_work_stream_pending"); l != 4 || lag != 4 || p != 0 {
		t.Fatalf("4 entries added: length %v, lag %v, pending %v; want 4, 4, 0", l, lag, p)
	}

	read, err := r.stream.readGroup(ctx, ">", 0)
	if err != nil || len(read) != 4 {
		t.Fatalf("read = %v, %v", read, err)
	}
	if err := r.stream.ack(ctx, []string{read[0].id}); err != nil {
		t.Fatal(err)
	}
	if err := r.stream.deadLetter(ctx, read[1]); err != nil {
		t.Fatal(err)
	}
	if lag, p, dead := metric("bc_work_stream_lag"), metric("bc_work_stream_pending"), metric("bc_work_dead_letters"); lag != 0 || p != 2 || dead != 1 {
		t.Fatalf("all read, one acknowledged, one dead-lettered: lag %v, pending %v, dead letters %v; want 0, 2, 1", lag, p, dead)
	}
	if age := metric("bc_work_stream_oldest_pending_seconds"); age < 0 {
		t.Fatalf("oldest pending age %v", age)
	}
}
