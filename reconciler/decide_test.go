package reconciler

import (
	"strings"
	"testing"

	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// desireds are every desired state.
var desireds = []lifecycle.Desired{lifecycle.WantRunning, lifecycle.WantStopped, lifecycle.WantPaused, lifecycle.WantDeleted}

// rebootingWith is f with its reboot command queued, ended when ended,
// failing with fail when that is set.
func rebootingWith(f facts, ended bool, fail string) facts {
	f.rebootQueued, f.rebootEnded, f.rebootError = true, ended, fail
	return f
}

func TestDecide(t *testing.T) {
	t.Parallel()
	const (
		run   = lifecycle.WantRunning
		stop  = lifecycle.WantStopped
		pause = lifecycle.WantPaused
		del   = lifecycle.WantDeleted
	)
	alive := func(s lifecycle.State, d lifecycle.Desired, p power, seen string) facts {
		return facts{state: s, desired: d, placed: true, hostAlive: true, host: "hv-1", power: p, seen: seen, seenReason: "boom"}
	}
	cases := []struct {
		name string
		f    facts
		want step
		ok   bool
	}{
		{"pending is placed", facts{state: lifecycle.Pending, desired: run}, step{place: true}, true},
		{"pending deleted goes to deleting", facts{state: lifecycle.Pending, desired: del}, step{to: lifecycle.Deleting, power: removePower}, true},
		{"unplaced deleting is deleted", facts{state: lifecycle.Deleting, desired: del}, step{to: lifecycle.Deleted, release: true}, true},
		{"deleting waits for the host", alive(lifecycle.Deleting, del, removePower, seenRunning), step{}, false},
		{"deleting ends when the host lost it", alive(lifecycle.Deleting, del, removePower, seenAbsent), step{to: lifecycle.Deleted, release: true}, true},
		{"deleting on a silent host ends", facts{state: lifecycle.Deleting, desired: del, placed: true, power: removePower}, step{to: lifecycle.Deleted, release: true}, true},
		{"running deleted", alive(lifecycle.Running, del, runPower, seenRunning), step{to: lifecycle.Deleting, power: removePower}, true},
		{"provisioning waits", alive(lifecycle.Provisioning, run, runPower, seenNothing), step{}, false},
		{"provisioning defined", alive(lifecycle.Provisioning, run, runPower, seenStopped), step{to: lifecycle.Starting}, true},
		{"provisioning runs", alive(lifecycle.Provisioning, run, runPower, seenRunning), step{to: lifecycle.Starting}, true},
		{"provisioning for stopped", alive(lifecycle.Provisioning, stop, stopPower, seenStopped), step{to: lifecycle.Stopped}, true},
		{"provisioning failed recreates", alive(lifecycle.Provisioning, run, runPower, seenFailed), recreate(alive(lifecycle.Provisioning, run, runPower, seenFailed)), true},
		{"provisioning stopped, now wanted running", alive(lifecycle.Provisioning, run, stopPower, seenStopped), step{power: runPower}, true},
		{"starting but told to stop", alive(lifecycle.Starting, run, stopPower, seenStopped), step{power: runPower}, true},
		{"starting runs", alive(lifecycle.Starting, run, runPower, seenRunning), step{to: lifecycle.Running}, true},
		{"starting fails", alive(lifecycle.Starting, run, runPower, seenFailed), step{to: lifecycle.Error, reason: "host hv-1: boom"}, true},
		{"running at rest", alive(lifecycle.Running, run, runPower, seenRunning), step{}, false},
		{"running stops", alive(lifecycle.Running, stop, runPower, seenRunning), step{to: lifecycle.Stopping, power: stopPower}, true},
		{"running crashed waits for the host to restart it", alive(lifecycle.Running, run, runPower, seenStopped), step{}, false},
		{"running vanished", alive(lifecycle.Running, run, runPower, seenAbsent), gone(alive(lifecycle.Running, run, runPower, seenAbsent)), true},
		{"stopping stopped", alive(lifecycle.Stopping, stop, stopPower, seenStopped), step{to: lifecycle.Stopped}, true},
		{"stopped at rest", alive(lifecycle.Stopped, stop, stopPower, seenStopped), step{}, false},
		{"stopped asks the host to start", alive(lifecycle.Stopped, run, stopPower, seenStopped), step{power: runPower, reason: "starting on host hv-1"}, true},
		{"stopped waits for the start", alive(lifecycle.Stopped, run, runPower, seenNothing), step{}, false},
		{"stopped started", alive(lifecycle.Stopped, run, runPower, seenRunning), step{to: lifecycle.Starting}, true},
		{"stopped cannot start: recreate", alive(lifecycle.Stopped, run, runPower, seenFailed), recreate(alive(lifecycle.Stopped, run, runPower, seenFailed)), true},
		{"rebooting queues its command", alive(lifecycle.Rebooting, run, runPower, seenRunning), step{reboot: true}, true},
		{"rebooting waits for its command", rebootingWith(alive(lifecycle.Rebooting, run, runPower, seenStopped), false, ""), step{}, false},
		{"rebooted runs", rebootingWith(alive(lifecycle.Rebooting, run, runPower, seenRunning), true, ""), step{to: lifecycle.Running}, true},
		{"a failed reboot runs with why", rebootingWith(alive(lifecycle.Rebooting, run, runPower, seenRunning), true, "deadline passed"), step{to: lifecycle.Running, reason: "reboot failed on host hv-1: deadline passed"}, true},
		{"a stop waits for the reboot", rebootingWith(alive(lifecycle.Rebooting, stop, runPower, seenRunning), false, ""), step{}, false},
		{"rebooting deleted", alive(lifecycle.Rebooting, del, runPower, seenRunning), step{to: lifecycle.Deleting, power: removePower}, true},
		{"rebooting vanished", rebootingWith(alive(lifecycle.Rebooting, run, runPower, seenAbsent), false, ""), gone(alive(lifecycle.Rebooting, run, runPower, seenAbsent)), true},
		{"rebooting cannot start", rebootingWith(alive(lifecycle.Rebooting, run, runPower, seenFailed), false, ""), step{to: lifecycle.Error, reason: "host hv-1: boom"}, true},
		{"rebooting on a silent host: lost", facts{state: lifecycle.Rebooting, desired: run, placed: true, host: "hv-1", power: runPower, rebootQueued: true}, step{to: lifecycle.Lost, reason: "host hv-1 stopped reporting"}, true},
		{"silent host: lost", facts{state: lifecycle.Running, desired: run, placed: true, host: "hv-1", power: runPower, seen: seenRunning}, step{to: lifecycle.Lost, reason: "host hv-1 stopped reporting"}, true},
		{"lost while silent", facts{state: lifecycle.Lost, desired: run, placed: true, host: "hv-1", seen: seenRunning}, step{}, false},
		{"lost comes back running", alive(lifecycle.Lost, run, runPower, seenRunning), step{to: lifecycle.Running}, true},
		{"lost comes back stopped", alive(lifecycle.Lost, stop, stopPower, seenStopped), step{to: lifecycle.Stopped}, true},
		{"invalid image: error, not recreate", alive(lifecycle.Provisioning, run, runPower, seenInvalid), step{to: lifecycle.Error, reason: "host hv-1: boom"}, true},
		{"invalid while stopped", alive(lifecycle.Stopped, run, runPower, seenInvalid), step{to: lifecycle.Error, reason: "host hv-1: boom"}, true},
		{"error stays", alive(lifecycle.Error, run, runPower, seenFailed), step{}, false},
		{"error deleted", alive(lifecycle.Error, del, runPower, seenFailed), step{to: lifecycle.Deleting, power: removePower}, true},
		// A warm instance boots, then pauses: its host reports it running
		// until its guest has booted, and the reconciler waits for PAUSED.
		{"warm provisioning boots", alive(lifecycle.Provisioning, pause, pausePower, seenRunning), step{to: lifecycle.Starting}, true},
		{"warm provisioning paused at once", alive(lifecycle.Provisioning, pause, pausePower, seenPaused), step{to: lifecycle.Starting}, true},
		{"warm starting keeps power paused", alive(lifecycle.Starting, pause, runPower, seenRunning), step{power: pausePower}, true},
		{"warm starting waits for the guest to boot", alive(lifecycle.Starting, pause, pausePower, seenRunning), step{}, false},
		{"warm starting paused", alive(lifecycle.Starting, pause, pausePower, seenPaused), step{to: lifecycle.Paused}, true},
		{"warm paused at rest", alive(lifecycle.Paused, pause, pausePower, seenPaused), step{}, false},
		{"claimed while booting runs", alive(lifecycle.Starting, run, pausePower, seenRunning), step{power: runPower}, true},
		{"claimed paused resumes", alive(lifecycle.Paused, run, pausePower, seenPaused), step{power: runPower, reason: "starting on host hv-1"}, true},
		{"claimed resumed", alive(lifecycle.Paused, run, runPower, seenRunning), step{to: lifecycle.Running}, true},
		{"running pauses", alive(lifecycle.Running, pause, runPower, seenRunning), step{power: pausePower}, true},
		{"running waits for the pause", alive(lifecycle.Running, pause, pausePower, seenRunning), step{}, false},
		{"running paused", alive(lifecycle.Running, pause, pausePower, seenPaused), step{to: lifecycle.Paused}, true},
		{"stopped asked to pause boots first", alive(lifecycle.Stopped, pause, stopPower, seenStopped), step{power: pausePower}, true},
		{"stopped booting to pause", alive(lifecycle.Stopped, pause, pausePower, seenRunning), step{to: lifecycle.Starting}, true},
		{"warm paused vanished", alive(lifecycle.Paused, pause, pausePower, seenAbsent), gone(alive(lifecycle.Paused, pause, pausePower, seenAbsent)), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := decide(c.f)
			if ok != c.ok || got != c.want {
				t.Fatalf("decide = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
			if ok && got.to != "" && !lifecycle.CanTransition(c.f.state, got.to) {
				t.Fatalf("%s → %s is not in the state table", c.f.state, got.to)
			}
		})
	}
}

// TestDecideOnlyTableTransitions checks every step decide can take, over
// every combination of facts, is allowed by the state table.
func TestDecideOnlyTableTransitions(t *testing.T) {
	t.Parallel()
	seens := []string{seenNothing, seenRunning, seenStopped, seenPaused, seenFailed, seenInvalid, seenAbsent}
	for _, s := range lifecycle.States {
		for _, d := range desireds {
			for _, seen := range seens {
				for _, placed := range []bool{false, true} {
					for _, alive := range []bool{false, true} {
						for _, p := range []power{keepPower, runPower, stopPower, pausePower} {
							f := facts{state: s, desired: d, placed: placed, hostAlive: alive, seen: seen, power: p}
							st, ok := decide(f)
							if ok && st.to != "" && !lifecycle.CanTransition(s, st.to) {
								t.Errorf("%+v → %s is not in the state table", f, st.to)
							}
						}
					}
				}
			}
		}
	}
}

// TestDecideConverges checks that from any state, wanting anything, an
// instance on a live host that does what its spec says reaches its desired
// state: decide never gets stuck waiting for something the spec does not
// ask for.
func TestDecideConverges(t *testing.T) {
	t.Parallel()
	obey := func(p power) string {
		return map[power]string{runPower: seenRunning, stopPower: seenStopped, pausePower: seenPaused, removePower: seenAbsent, keepPower: seenNothing}[p]
	}
	states := []lifecycle.State{lifecycle.Pending, lifecycle.Provisioning, lifecycle.Starting, lifecycle.Running,
		lifecycle.Stopping, lifecycle.Stopped, lifecycle.Paused, lifecycle.Lost, lifecycle.Deleting}
	for _, s := range states {
		for _, d := range desireds {
			for _, p := range []power{runPower, stopPower, pausePower, removePower} {
				if s == lifecycle.Deleting && d != lifecycle.WantDeleted {
					continue // deletion is final
				}
				if p == removePower && s != lifecycle.Pending && s != lifecycle.Deleting {
					continue // only those are out of the spec
				}
				f := facts{state: s, desired: d, placed: s != lifecycle.Pending, hostAlive: true, host: "hv-1", power: p}
				if !f.placed {
					f.power = removePower
				}
				start := f
				f.seen = obey(f.power)
				var path []lifecycle.State
				for i := 0; ; i++ {
					if f.state == lifecycle.State(d) {
						break
					}
					if i == 20 {
						t.Fatalf("from %+v: no rest after 20 steps: %v", start, path)
					}
					st, ok := decide(f)
					if !ok {
						t.Fatalf("from %+v: stuck at %+v after %v", start, f, path)
					}
					switch {
					case st.place:
						f.placed, f.state, f.power = true, lifecycle.Provisioning, powerFor(d)
					default:
						if st.to != "" {
							f.state = st.to
						}
						if st.power != keepPower {
							f.power = st.power
						}
						if st.recreate {
							f.placed = false
						}
					}
					f.seen = obey(f.power)
					path = append(path, f.state)
				}
			}
		}
	}
}

// TestTransitionRefusesWhatTheTableForbids: the write itself checks the
// state table, before it touches the database.
func TestTransitionRefusesWhatTheTableForbids(t *testing.T) {
	t.Parallel()
	_, err := transition(t.Context(), nil, sqlc.TransitionParams{FromState: "DELETED", ToState: "RUNNING"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "not in the state table") {
		t.Fatalf("transition DELETED → RUNNING: %v", err)
	}
}
