package hostd_test

import (
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostproto"
)

// waitPoll returns once the daemon long-polls after generation want, and
// fails the test after waitFor.
func waitPoll(t *testing.T, gw *gateway, want int64) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case after := <-gw.polls:
			if after == want {
				return
			}
		case <-timeout:
			t.Fatalf("no spec long-poll after generation %d within %v", want, waitFor)
		}
	}
}

// waitServed returns the first spec served of generation gen.
func waitServed(t *testing.T, gw *gateway, gen int64) hostproto.NodeSpec {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case s := <-gw.served:
			if s.Generation == gen {
				return s
			}
		case <-timeout:
			t.Fatalf("no spec of generation %d served within %v", gen, waitFor)
		}
	}
}

// TestSpecDeltas: a daemon served deltas (version 5) converges as with
// whole specs: a changed entry applies, an unchanged one keeps its domain,
// a removed one is undefined; restarted, it asks for the whole spec
// (after=0) and adopts what it finds.
func TestSpecDeltas(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	gw.serveDeltas()
	hv := newHypervisor(t, fake.Config{})
	first := start(t, gw, hv)

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerRunning))
	waitReport(t, gw, "both running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_b": hostproto.StateRunning})
	})
	waitPoll(t, gw, gen)

	gen = gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerStopped), instance("ins_c", hostproto.PowerRunning))
	if d := waitServed(t, gw, gen); d.After != gen-1 || len(d.Instances) != 2 || len(d.Unchanged) != 1 || d.Unchanged[0].ID != "ins_a" {
		t.Fatalf("served %+v, want a delta to %d with ins_b and ins_c, ins_a unchanged", d, gen-1)
	}
	want := map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_b": hostproto.StateStopped, "ins_c": hostproto.StateRunning}
	waitReport(t, gw, "ins_a running, ins_b stopped, ins_c running", func(r hostproto.Report) bool { return is(r, gen, want) })

	gen = gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_c", hostproto.PowerRunning))
	if d := waitServed(t, gw, gen); d.After != gen-1 || len(d.Instances) != 0 || len(d.Unchanged) != 2 {
		t.Fatalf("served %+v, want a delta to %d with ins_a and ins_c unchanged", d, gen-1)
	}
	want = map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_b": "", "ins_c": hostproto.StateRunning}
	waitReport(t, gw, "ins_b removed", func(r hostproto.Report) bool { return is(r, gen, want) })
	definedOnce := func(when string) {
		t.Helper()
		for _, id := range []string{"ins_a", "ins_c"} {
			if got := hv.Calls(id); got != (fake.Calls{Define: 1, Start: 1}) {
				t.Errorf("%s %s: calls %+v, want one define and one start", id, when, got)
			}
		}
	}
	definedOnce("after the deltas")
	if _, ok := hv.Spec("ins_b"); ok {
		t.Error("ins_b is still defined")
	}
	first.stop(t)

	gw.drain()
	for len(gw.polls) > 0 {
		<-gw.polls
	}
	start(t, gw, hv)
	waitPoll(t, gw, 0)
	for range 3 { // the converge of the spec and two heartbeats
		waitReport(t, gw, "the spec after a restart", func(r hostproto.Report) bool { return is(r, gen, want) })
	}
	definedOnce("after a restart")
}

// TestDeltaNotWhole: a delta the daemon cannot make whole (it names an
// unchanged entry the daemon does not hold at that generation) is not run:
// the daemon asks for the whole spec and defines the instance from its
// whole entry.
func TestDeltaNotWhole(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	gw.serveDeltas()
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv)

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
	waitPoll(t, gw, gen)
	// The delta says ins_d is unchanged, though the daemon never had it.
	gw.spoilNextDelta(func(s *hostproto.NodeSpec) {
		for i, is := range s.Instances {
			if is.ID == "ins_d" {
				s.Instances = append(s.Instances[:i], s.Instances[i+1:]...)
				s.Unchanged = append(s.Unchanged, hostproto.EntryRef{ID: is.ID, Generation: is.Generation})
			}
		}
	})
	gen = gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_d", hostproto.PowerRunning))
	waitPoll(t, gw, 0)
	waitReport(t, gw, "ins_a and ins_d running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_d": hostproto.StateRunning})
	})
	if spec, _ := hv.Spec("ins_d"); spec.Image.URL == "" || spec.Name != "d" {
		t.Fatalf("ins_d defined from %+v, not its whole entry", spec)
	}
}
