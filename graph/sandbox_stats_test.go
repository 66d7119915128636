package graph_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/ids"
)

// TestSandboxStats: the stats hosts report of a sandbox's instance are
// written every interval (the latest of each instance), shown as CPU and
// memory points, kept an hour after the sandbox ended and then pruned.
func TestSandboxStats(t *testing.T) {
	t.Parallel()
	e, w, tpl := setupSandboxes(t)
	ended := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	recent := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	live := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	e.warm(tpl.ID, 1)
	var warm uuid.UUID
	if err := e.db.QueryRow(context.Background(), "SELECT id FROM instances WHERE warm_template_id IS NOT NULL").Scan(&warm); err != nil {
		t.Fatal(err)
	}
	rec := control.NewStatsRecorder(e.db, control.StatsConfig{Keep: time.Hour})
	t0 := time.Now().Truncate(time.Millisecond)
	const mib = 1 << 20
	report := func(at time.Time, cpu time.Duration, mem int64) {
		t.Helper()
		samples := map[uuid.UUID]control.StatSample{warm: {At: at, CPUTimeNs: int64(cpu), MemoryBytes: mem}}
		for _, s := range []sandboxView{ended, recent, live} {
			samples[decode(t, ids.Instance, s.Instance.ID)] = control.StatSample{At: at, CPUTimeNs: int64(cpu), MemoryBytes: mem}
		}
		rec.Add(uuid.New(), at, samples)
	}
	report(t0, time.Second, 100*mib)
	if n, err := rec.Flush(context.Background()); err != nil || n != 3 {
		t.Fatalf("first flush wrote %d, %v; want the 3 sandboxes' (not the warm instance's)", n, err)
	}
	// Two reports in one interval: the latest is written. Half of the one
	// vCPU over 5 s, then, after a restart, less CPU time than before.
	report(t0.Add(4*time.Second), 2*time.Second, 120*mib)
	report(t0.Add(5*time.Second), 3500*time.Millisecond, 150*mib)
	rec.Flush(context.Background())
	report(t0.Add(10*time.Second), time.Second, 90*mib)
	rec.Flush(context.Background())

	type point struct {
		At       time.Time
		CPU      *float64
		MemoryMb float64
	}
	var out struct{ Sandbox struct{ Stats []point } }
	e.must(w.member, `query($id: ID!) { sandbox(id: $id) { stats { at cpu memoryMb } } }`, map[string]any{"id": live.ID}, &out)
	got := out.Sandbox.Stats
	if len(got) != 3 || !got[0].At.Equal(t0) || got[0].CPU != nil || got[0].MemoryMb != 100 ||
		got[1].CPU == nil || math.Abs(*got[1].CPU-0.5) > 1e-9 || got[1].MemoryMb != 150 || got[2].CPU != nil || got[2].MemoryMb != 90 {
		t.Fatalf("stats = %+v", got)
	}
	e.must(w.member, `query($id: ID!, $since: DateTime) { sandbox(id: $id) { stats(since: $since) { at cpu memoryMb } } }`,
		map[string]any{"id": live.ID, "since": t0.Add(time.Second)}, &out)
	if len(out.Sandbox.Stats) != 2 {
		t.Errorf("stats since a time: %+v", out.Sandbox.Stats)
	}

	for _, s := range []sandboxView{ended, recent} {
		e.must(w.member, `mutation($id: ID!) { deleteSandbox(input: {id: $id}) { sandbox { id } } }`, map[string]any{"id": s.ID}, nil)
	}
	if _, err := e.db.Exec(context.Background(), "UPDATE sandboxes SET ended_at = now() - interval '61 minutes' WHERE id = $1", decode(t, ids.Sandbox, ended.ID)); err != nil {
		t.Fatal(err)
	}
	if n, err := rec.Prune(context.Background(), time.Now()); err != nil || n != 3 {
		t.Fatalf("prune deleted %d, %v; want the 3 samples of the sandbox that ended over an hour ago", n, err)
	}
	for _, c := range []struct {
		sbx  sandboxView
		want int
	}{{ended, 0}, {recent, 3}, {live, 3}} {
		if n := e.count("sandbox_stats", "sandbox_id = $1", decode(t, ids.Sandbox, c.sbx.ID)); n != c.want {
			t.Errorf("%s has %d samples, want %d", c.sbx.ID, n, c.want)
		}
	}
	t.Run("another tenant's are NOT_FOUND", func(t *testing.T) {
		b := e.world("beta")
		if r := e.do(b.member, `query($id: ID!) { sandbox(id: $id) { stats { at } } }`, map[string]any{"id": live.ID}); r.code() != "NOT_FOUND" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
}
