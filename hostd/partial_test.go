package hostd_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
)

// TestPartialReports: between heartbeats the daemon posts partial reports
// (version 5): only the statuses that changed since its last accepted
// report, without stats (not even in the report's stats), and as absent the instances it no longer has;
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
	if !r.Partial || len(r.Instances) != 1 || len(r.Absent) != 0 || len(r.Stats) != 0 || r.Instances[0].Generation != gen {
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

// TestHeartbeatReports: from version 6 the heartbeat's reports are
// partial, with every running instance's stats in the report's stats, and
// every WholeReportEvery heartbeats whole, with stats in the statuses.
// Before version 6 (at 5) every heartbeat's report is whole.
func TestHeartbeatReports(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		version int
		partial bool // heartbeats between the whole ones are partial
	}{
		{hostproto.HeartbeatVersion, true},
		{hostproto.DeltaVersion, false},
	} {
		t.Run(fmt.Sprintf("version %d", c.version), func(t *testing.T) {
			t.Parallel()
			gw := newGateway(t)
			gw.serveDeltas()
			gw.speak(c.version)
			hv := newHypervisor(t, fake.Config{})
			start(t, gw, hv, heartbeat(100*time.Millisecond), func(cfg *hostd.Config) {
				cfg.Protocol, cfg.WholeReportEvery = c.version, 3
			})

			gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerRunning))
			withStats, wholes := 0, 0
			waitOn(t, gw.posted, "two whole reports with both running, with stats", func(r hostproto.Report) bool {
				if r.Partial {
					for _, st := range r.Instances {
						if st.Stats != nil {
							t.Fatalf("a partial report with stats in a status: %s", describe(&r))
						}
					}
					if _, ok := r.Stats["ins_a"]; ok && r.Generation == gen {
						if _, ok := r.Stats["ins_b"]; !ok {
							t.Fatalf("a partial report with ins_a's stats but not ins_b's: %+v", r.Stats)
						}
						withStats++
					}
					return false
				}
				if len(r.Stats) > 0 {
					t.Fatalf("a whole report with stats outside its statuses: %+v", r)
				}
				a, _ := status(r, "ins_a")
				b, _ := status(r, "ins_b")
				if r.Generation == gen && a.Stats != nil && b.Stats != nil {
					wholes++
				}
				return wholes == 2
			})
			if got := withStats > 0; got != c.partial {
				t.Fatalf("%d partial reports with both's stats before the 2nd whole one; want some: %v", withStats, c.partial)
			}
		})
	}
}
