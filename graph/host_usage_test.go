package graph_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/ids"
)

// TestHostUsage: a host's usage is one point per flush of what its
// instances used, summed (the vCPUs from the CPU time since the point
// before, none for the first), its instances those it holds; a day's
// points are kept; operators only.
func TestHostUsage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	host := e.id(e.operator, `mutation($p: ID!) { createHost(input: {poolId: $p, name: "hv-1"}) { host { id } } }`,
		map[string]any{"p": w.pool}, "createHost", "host", "id")
	a := e.id(w.member, createInstance, map[string]any{"in": w.input("a")}, "createInstance", "instance", "id")
	b := e.id(w.member, createInstance, map[string]any{"in": w.input("b")}, "createInstance", "instance", "id")
	hostID := decode(t, ids.Host, host)
	if _, err := e.db.Exec(context.Background(), "UPDATE instances SET state = 'RUNNING', host_id = $1", hostID); err != nil {
		t.Fatal(err)
	}
	rec := control.NewStatsRecorder(e.db, control.StatsConfig{HostKeep: time.Hour})
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	const mib = 1 << 20
	report := func(at time.Time, cpuA, cpuB time.Duration) {
		t.Helper()
		rec.Add(hostID, at, map[uuid.UUID]control.StatSample{
			decode(t, ids.Instance, a): {At: at, CPUTimeNs: int64(cpuA), MemoryBytes: 100 * mib},
			decode(t, ids.Instance, b): {At: at, CPUTimeNs: int64(cpuB), MemoryBytes: 50 * mib},
		})
		if _, err := rec.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	report(t0, time.Second, time.Second)
	// Over 10 s, a used 5 s of CPU and b 2 s: 0.7 vCPU.
	report(t0.Add(10*time.Second), 6*time.Second, 3*time.Second)

	var out struct {
		Node struct {
			Usage []struct {
				At        time.Time
				VcpusUsed *float64
				MemoryMb  float64
				Instances int
			}
			Instances []struct{ Name string }
		}
	}
	const query = `query($id: ID!) { node(id: $id) { ... on Host { usage { at vcpusUsed memoryMb instances } instances { name } } } }`
	e.must(e.operator, query, map[string]any{"id": host}, &out)
	u := out.Node.Usage
	if len(u) != 2 || u[0].VcpusUsed != nil || u[1].VcpusUsed == nil || *u[1].VcpusUsed < 0.699 || *u[1].VcpusUsed > 0.701 ||
		u[1].MemoryMb != 150 || u[1].Instances != 2 || !u[1].At.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("usage %+v", u)
	}
	if in := out.Node.Instances; len(in) != 2 || in[0].Name != "a" || in[1].Name != "b" {
		t.Fatalf("instances %+v", in)
	}
	t.Run("kept HostKeep", func(t *testing.T) {
		if _, err := rec.Prune(context.Background(), t0.Add(time.Hour+5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if n := e.count("host_stats", "true"); n != 1 {
			t.Fatalf("%d points after pruning, want the later one", n)
		}
	})
	t.Run("operators only", func(t *testing.T) {
		if r := e.do(w.member, query, map[string]any{"id": host}); r.code() != "NOT_FOUND" {
			t.Fatalf("a member: %+v", r.Errors)
		}
	})
}

// TestStatsFlushIndependent: a flush whose host stats cannot be written
// still writes the sandboxes', and says what failed.
func TestStatsFlushIndependent(t *testing.T) {
	t.Parallel()
	e, w, tpl := setupSandboxes(t)
	sbx := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	if _, err := e.db.Exec(context.Background(), `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'host stats refused'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON host_stats FOR EACH STATEMENT EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	rec := control.NewStatsRecorder(e.db, control.StatsConfig{})
	now := time.Now()
	rec.Add(uuid.New(), now, map[uuid.UUID]control.StatSample{decode(t, ids.Instance, sbx.Instance.ID): {At: now, CPUTimeNs: 1, MemoryBytes: 1 << 20}})
	n, err := rec.Flush(context.Background())
	if n != 1 || err == nil || !strings.Contains(err.Error(), "host stats refused") {
		t.Fatalf("flush wrote %d sandbox samples, %v; want 1 and the host stats' error", n, err)
	}
}
