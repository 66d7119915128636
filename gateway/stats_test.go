package gateway_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// sink records what the gateway hands its StatsSink.
type sink struct {
	mu  sync.Mutex
	got []gateway.HostStats
}

func (s *sink) HostStats(ctx context.Context, hs gateway.HostStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, hs)
}

func (s *sink) all() []gateway.HostStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gateway.HostStats(nil), s.got...)
}

// TestReportStats: the stats of an accepted report reach the StatsSink,
// those of the host's own instances only; a refused report hands over
// nothing.
func TestReportStats(t *testing.T) {
	t.Parallel()
	var got sink
	e := setup(t, func(c *gateway.Config) { c.Stats = &got })
	gen := e.place("paused")
	own := hostproto.Stats{CPUTimeNs: 1_500_000_000, MemoryBytes: 256 << 20}
	stranger := ids.Encode(ids.Instance, ids.New()) // not this host's
	report := func(g int64) int {
		return e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: g,
			Instances: []hostproto.InstanceStatus{
				{ID: ids.Encode(ids.Instance, e.instance), State: hostproto.StatePaused, Stats: &own},
				{ID: stranger, State: hostproto.StateRunning, Stats: &hostproto.Stats{CPUTimeNs: 1, MemoryBytes: 1}},
			}}).StatusCode
	}
	if code := report(gen + 1); code != 409 {
		t.Fatalf("a report ahead of the spec: %d, want 409", code)
	}
	if n := len(got.all()); n != 0 {
		t.Fatalf("a refused report handed %d stats to the sink", n)
	}
	if code := report(gen); code != 204 {
		t.Fatalf("report: %d", code)
	}
	all := got.all()
	if len(all) != 1 {
		t.Fatalf("the sink got %d reports' stats, want 1", len(all))
	}
	hs := all[0]
	want := map[uuid.UUID]hostproto.Stats{e.instance: own}
	if hs.Host != e.host || hs.At.IsZero() || len(hs.Instances) != 1 || hs.Instances[e.instance] != want[e.instance] {
		t.Fatalf("the sink got %+v, want host %s with %v", hs, e.host, want)
	}
	var observed string
	e.db.QueryRow(context.Background(), "SELECT observed_state FROM instances WHERE id = $1", e.instance).Scan(&observed)
	if observed != "paused" {
		t.Fatalf("observed %q, want paused", observed)
	}
}
