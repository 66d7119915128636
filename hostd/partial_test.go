package hostd_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostproto"
)

// TestPartialReports: between heartbeats the daemon posts partial reports
// (version 5): only the statuses that changed since its last accepted
// report, without stats, and as absent the instances it no longer has;
// after a report failed, the next is whole.
func TestPartialReports(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	gw.serveDeltas()
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv, heartbeat(time.Hour)) // no heartbeat: every report but the first may be partial

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerRunning))
	waitReport(t, gw, "both running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_b": hostproto.StateRunning})
	})

	gen = gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerStopped))
	r := waitOn(t, gw.posted, "ins_b stopped", func(r hostproto.Report) bool {
		if _, listed := status(r, "ins_a"); listed && r.Partial && r.Generation == gen {
			t.Errorf("ins_a, unchanged, in a partial report: %s", describe(&r))
		}
		st, ok := status(r, "ins_b")
		return r.Generation == gen && ok && st.State == hostproto.StateStopped
	})
	if !r.Partial || len(r.Instances) != 1 || len(r.Absent) != 0 || r.Instances[0].Generation != gen {
		t.Fatalf("report of ins_b stopped: %s, want partial with only ins_b at generation %d", describe(&r), gen)
	}

	gen = gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	r = waitOn(t, gw.posted, "ins_b absent", func(r hostproto.Report) bool { return r.Generation == gen && len(r.Absent) > 0 })
	if !r.Partial || len(r.Instances) != 0 || !reflect.DeepEqual(r.Absent, []string{"ins_b"}) {
		t.Fatalf("report of ins_b removed: %+v, want partial with only ins_b absent", r)
	}

	// A report refused: the next one accepted is whole. A crash makes the
	// report (a spec would not reach the daemon while the gateway is down).
	gw.setDown(true)
	if err := hv.Crash("ins_a"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(waitFor)
	for refused := false; !refused; {
		select {
		case f := <-gw.refused:
			refused = f.path == hostproto.ReportPath
		case <-timeout:
			t.Fatal("no report refused")
		}
	}
	gw.setDown(false)
	r = waitOn(t, gw.posted, "a report after the refusal", func(r hostproto.Report) bool { return true })
	if r.Partial {
		t.Fatalf("the report after a refused one is partial: %+v", r)
	}
}

// TestHeartbeatReportsWhole: the heartbeat's reports are whole, with
// stats; the partial ones between them carry none.
func TestHeartbeatReportsWhole(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	gw.serveDeltas()
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv, heartbeat(200*time.Millisecond))

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerRunning))
	partials := 0
	waitOn(t, gw.posted, "a whole report with both running, with stats, after a partial one", func(r hostproto.Report) bool {
		if r.Partial {
			partials++
			for _, st := range r.Instances {
				if st.Stats != nil {
					t.Fatalf("a partial report with stats: %+v", r)
				}
			}
			return false
		}
		a, _ := status(r, "ins_a")
		b, _ := status(r, "ins_b")
		return partials > 0 && r.Generation == gen && a.Stats != nil && b.Stats != nil
	})
}
