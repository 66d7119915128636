package gateway_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// statements records the statements run on a pool: the sqlc query's name,
// or the statement's first word (begin, savepoint, commit).
type statements struct {
	mu  sync.Mutex
	ran []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	name := strings.Fields(d.SQL)
	if len(name) > 3 && name[0] == "--" && name[1] == "name:" {
		name = name[2:]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = append(s.ran, name[0])
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements run since the last take.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ran := s.ran
	s.ran = nil
	return ran
}

// counted makes the gateway's pool record its statements in s.
func counted(t testing.TB, s *statements) func(*gateway.Config) {
	return func(c *gateway.Config) {
		cfg := c.DB.Config()
		cfg.ConnConfig.Tracer = s
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		c.DB = pool
	}
}

// TestIdleHeartbeatCost: a heartbeat of a host where nothing changed reads
// and writes only the host's row and its instances' IDs (for the stats),
// whatever the host holds; the whole one every WholeReportEvery
// heartbeats also records each status, absence and certification.
func TestIdleHeartbeatCost(t *testing.T) {
	t.Parallel()
	var ran statements
	e := setup(t, counted(t, &ran), func(c *gateway.Config) { c.Stats = &sink{} })
	e.place("running")
	other := e.another("api")
	gen := e.placeOn(other, "running")
	a, b := ids.Encode(ids.Instance, e.instance), ids.Encode(ids.Instance, other)
	s := hostproto.Stats{CPUTimeNs: 1, MemoryBytes: 1}
	whole := hostproto.Report{Protocol: hostproto.Version, Generation: gen, Inventory: &hostproto.Inventory{Vcpus: 8, MemoryMB: 8192, DiskGB: 100},
		Instances: []hostproto.InstanceStatus{{ID: a, State: hostproto.StateRunning, Stats: &s}, {ID: b, State: hostproto.StateRunning, Stats: &s}}}
	partial := hostproto.Report{Protocol: hostproto.Version, Generation: gen, Inventory: whole.Inventory, Partial: true,
		Instances: []hostproto.InstanceStatus{}, Stats: map[string]hostproto.Stats{a: s, b: s}}
	post := func(r hostproto.Report) []string {
		t.Helper()
		ran.take()
		if resp := e.request("POST", hostproto.ReportPath, e.credential, r); resp.StatusCode != 204 {
			t.Fatalf("report: %d %s", resp.StatusCode, body(t, resp.Body))
		}
		return ran.take()
	}
	post(whole) // the first: capacity adopted, statuses and certification recorded
	post(partial)

	for _, c := range []struct {
		name   string
		report hostproto.Report
		want   []string
	}{
		{"partial", partial, []string{"HostByCredential", "begin", "HostReportState", "savepoint", "HostInstances", "release", "RecordReport", "commit"}},
		{"whole", whole, []string{"HostByCredential", "begin", "HostReportState", "savepoint", "ObserveReported", "ObserveAbsent", "HostInstances", "release",
			"savepoint", "SetHostCertification", "release", "RecordReport", "commit"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := post(c.report); !slices.Equal(got, c.want) {
				t.Fatalf("an idle %s heartbeat ran %d statements %v, want %d: %v", c.name, len(got), got, len(c.want), c.want)
			}
		})
	}
}
