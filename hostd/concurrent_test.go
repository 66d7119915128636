package hostd_test

import (
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostproto"
)

// at reports whether r says instance id is in state, converged to gen.
func at(r hostproto.Report, id string, state hostproto.State, gen int64) bool {
	st, _ := status(r, id)
	return st.State == state && st.Generation == gen
}

// TestConvergeConcurrently: one instance's slow define holds up neither
// another instance's resume nor the reports, and the instance being defined
// is reported defining at the generation it was last converged to.
func TestConvergeConcurrently(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	rt := newBlocking(t, fake.Config{})
	start(t, gw, rt, heartbeat(time.Hour))

	b := instance("ins_b", hostproto.PowerPaused)
	gen1 := gw.setSpec(b)
	waitReport(t, gw, "ins_b paused", func(r hostproto.Report) bool { return at(r, "ins_b", hostproto.StatePaused, gen1) })

	rt.hold("define")
	a := instance("ins_a", hostproto.PowerRunning)
	gen2 := gw.setSpec(a, b)
	rt.waitEntered(t, "define ins_a")
	waitReport(t, gw, "ins_a defining at generation 0", func(r hostproto.Report) bool {
		return r.Generation == gen2 && at(r, "ins_a", hostproto.StateDefining, 0) && at(r, "ins_b", hostproto.StatePaused, gen2)
	})

	b.Power = hostproto.PowerRunning
	gen3 := gw.setSpec(a, b)
	waitReport(t, gw, "ins_b resumed while ins_a's define is held", func(r hostproto.Report) bool {
		return r.Generation == gen3 && at(r, "ins_b", hostproto.StateRunning, gen3) && at(r, "ins_a", hostproto.StateDefining, 0)
	})

	rt.release("define")
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool { return at(r, "ins_a", hostproto.StateRunning, gen3) })
	for _, id := range []string{"ins_a", "ins_b"} {
		if n := rt.mostAtOnce(id); n != 1 {
			t.Errorf("%s: %d calls at once, want 1", id, n)
		}
	}
	if got := rt.Calls("ins_a"); got != (fake.Calls{Define: 1, Start: 1}) {
		t.Errorf("ins_a: calls %+v, want one define and one start", got)
	}
}

// TestBusyInstanceConvergedAfterItsStep: spec changes for an instance
// whose step is under way wait for it to end, and are then applied, with
// never two steps at once for the instance.
func TestBusyInstanceConvergedAfterItsStep(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	rt := newBlocking(t, fake.Config{})
	start(t, gw, rt, heartbeat(time.Hour))

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool { return at(r, "ins_a", hostproto.StateRunning, gen) })

	rt.hold("shutdown")
	stopGen := gw.setSpec(instance("ins_a", hostproto.PowerStopped))
	rt.waitEntered(t, "shutdown ins_a")
	gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	last := gw.setSpec(instance("ins_a", hostproto.PowerPaused))
	waitReport(t, gw, "ins_a still running at the earlier generation", func(r hostproto.Report) bool {
		return r.Generation == last && at(r, "ins_a", hostproto.StateRunning, gen)
	})
	if got := rt.count("shutdown", "ins_a"); got != 1 {
		t.Fatalf("%d shutdowns while the first is held, want 1", got)
	}

	rt.release("shutdown")
	waitReport(t, gw, "ins_a paused at the last generation", func(r hostproto.Report) bool {
		return at(r, "ins_a", hostproto.StatePaused, last)
	})
	if n := rt.mostAtOnce("ins_a"); n != 1 {
		t.Errorf("%d calls at once for ins_a, want 1", n)
	}
	want := fake.Calls{Define: 1, Start: 2, Shutdown: 1, Pause: 1}
	if got := rt.Calls("ins_a"); got != want {
		t.Errorf("calls %+v, want %+v (the held shutdown of generation %d, then start and pause)", got, want, stopGen)
	}
}

// TestBusyInstanceRemovedAfterItsStep: an instance that leaves the spec
// while its step is under way is undefined once the step ends, without a
// heartbeat.
func TestBusyInstanceRemovedAfterItsStep(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	rt := newBlocking(t, fake.Config{})
	start(t, gw, rt, heartbeat(time.Hour))

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool { return at(r, "ins_a", hostproto.StateRunning, gen) })
	rt.hold("shutdown")
	gw.setSpec(instance("ins_a", hostproto.PowerStopped))
	rt.waitEntered(t, "shutdown ins_a")
	gen = gw.setSpec()
	rt.release("shutdown")
	waitReport(t, gw, "ins_a gone", func(r hostproto.Report) bool {
		_, listed := status(r, "ins_a")
		return r.Generation == gen && !listed
	})
	if got := rt.Calls("ins_a").Undefine; got != 1 {
		t.Errorf("%d undefines, want 1", got)
	}
}
