package reconciler

import (
	"fmt"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/lifecycle"
)

// What a host last said of an instance, since its spec entry last changed.
const (
	seenNothing = ""
	seenRunning = string(hostproto.StateRunning)
	seenStopped = string(hostproto.StateStopped)
	seenPaused  = string(hostproto.StatePaused)
	seenFailed  = string(hostproto.StateFailed)
	seenInvalid = string(hostproto.StateInvalid)
	seenAbsent  = "absent"
)

// facts are what the next step of a hosted instance depends on.
type facts struct {
	state   lifecycle.State
	desired lifecycle.Desired
	// placed: the instance has a host.
	placed bool
	// hostAlive: its host reported within the silence timeout.
	hostAlive bool
	host      string
	// power is what the instance's spec entry says now.
	power power
	// seen is what the host last reported for the current spec entry.
	seen       string
	seenReason string
	// rebootQueued: a REBOOTING instance's reboot command is queued;
	// rebootEnded: it ended, failing with rebootError when that is set.
	rebootQueued, rebootEnded bool
	rebootError               string
}

// power is the change a step makes to the instance's NodeSpec entry.
type power int

const (
	keepPower power = iota
	runPower
	stopPower
	pausePower
	removePower // the host must not have it
)

// step is one thing to do to an instance.
type step struct {
	// to is the state to move to; "" keeps the state (a spec-only change).
	to     lifecycle.State
	reason string
	power  power
	// place the pending instance on a host.
	place bool
	// recreate gives up the host (allocation, devices) to be placed again
	// elsewhere; the address is kept.
	recreate bool
	// release frees everything the instance holds: it is deleted.
	release bool
	// reboot queues the host command that reboots the instance.
	reboot bool
}

// decide returns the next step for a hosted instance, if there is one. It is
// level-based: it looks only at the facts, never at what woke it.
func decide(f facts) (step, bool) {
	const (
		pending, provisioning, starting, running = lifecycle.Pending, lifecycle.Provisioning, lifecycle.Starting, lifecycle.Running
		stopping, stopped, paused, deleting      = lifecycle.Stopping, lifecycle.Stopped, lifecycle.Paused, lifecycle.Deleting
		deleted, lost, errored, rebooting        = lifecycle.Deleted, lifecycle.Lost, lifecycle.Error, lifecycle.Rebooting
	)
	if f.state == deleted {
		return step{}, false // terminal
	}
	if f.desired == lifecycle.WantDeleted || f.state == deleting {
		switch f.state {
		case deleting:
			if f.placed && f.power != removePower {
				return step{power: removePower}, true
			}
			if !f.placed || !f.hostAlive || f.seen == seenAbsent {
				return step{to: deleted, release: true}, true
			}
			return step{}, false
		}
		return step{to: deleting, power: removePower}, true
	}
	if f.state == pending {
		return step{place: true}, true
	}
	onHost := f.state != errored && f.state != lost && f.state != deleting
	if f.placed && !f.hostAlive && onHost {
		return step{to: lost, reason: fmt.Sprintf("host %s stopped reporting", f.host)}, true
	}
	if f.seen == seenInvalid && f.state != errored {
		// No host could run it: recreating it elsewhere would not help.
		return step{to: errored, reason: fmt.Sprintf("host %s: %s", f.host, f.seenReason)}, true
	}
	switch f.state {
	case provisioning:
		if f.desired == lifecycle.WantRunning && f.power != runPower && f.seen != seenFailed {
			// Asked for while it was being made stopped: tell the host first.
			return step{power: runPower}, true
		}
		switch f.seen {
		case seenFailed:
			return recreate(f), true
		case seenStopped:
			if f.desired == lifecycle.WantStopped {
				return step{to: stopped}, true
			}
			return step{to: starting}, true
		case seenRunning, seenPaused:
			return step{to: starting}, true
		case seenAbsent:
			return gone(f), true
		}
	case starting:
		// A warm instance (desired PAUSED) boots and then pauses: its host
		// reports it running until its guest has booted.
		want := runPower
		if f.desired == lifecycle.WantPaused {
			want = pausePower
		}
		if f.power != want {
			return step{power: want}, true
		}
		switch f.seen {
		case seenRunning:
			if want == runPower {
				return step{to: running}, true
			}
		case seenPaused:
			if want == pausePower {
				return step{to: paused}, true
			}
		case seenFailed:
			return step{to: errored, reason: fmt.Sprintf("host %s: %s", f.host, f.seenReason)}, true
		case seenAbsent:
			return gone(f), true
		}
	case running:
		switch {
		case f.desired == lifecycle.WantRunning && f.power != runPower:
			return step{power: runPower}, true
		case f.desired == lifecycle.WantPaused && f.power != pausePower:
			return step{power: pausePower}, true
		case f.desired == lifecycle.WantPaused && f.seen == seenPaused:
			return step{to: paused}, true
		case f.desired == lifecycle.WantStopped:
			return step{to: stopping, power: stopPower}, true
		case f.seen == seenFailed:
			return step{to: errored, reason: fmt.Sprintf("host %s: %s", f.host, f.seenReason)}, true
		case f.seen == seenAbsent:
			return gone(f), true
		}
	case rebooting:
		// A stop asked for meanwhile waits for the reboot to end.
		switch {
		case f.seen == seenFailed:
			return step{to: errored, reason: fmt.Sprintf("host %s: %s", f.host, f.seenReason)}, true
		case f.seen == seenAbsent:
			return gone(f), true
		case !f.rebootQueued:
			return step{reboot: true}, true
		case f.rebootEnded && f.rebootError != "":
			return step{to: running, reason: fmt.Sprintf("reboot failed on host %s: %s", f.host, f.rebootError)}, true
		case f.rebootEnded:
			return step{to: running}, true
		}
	case stopping:
		if f.power != stopPower {
			return step{power: stopPower}, true
		}
		switch f.seen {
		case seenStopped:
			return step{to: stopped}, true
		case seenFailed:
			return step{to: errored, reason: fmt.Sprintf("host %s: %s", f.host, f.seenReason)}, true
		case seenAbsent:
			return gone(f), true
		}
	case stopped, paused:
		// Starting, resuming or pausing is asked of the host first; the
		// state moves once the host says it did, so a host that cannot
		// start it makes it recreate from STOPPED. A stopped instance
		// asked to pause boots first (STARTING), as a warm one does.
		want := powerFor(f.desired)
		booted := f.seen == seenRunning || f.seen == seenPaused
		switch {
		case f.seen == seenFailed && f.state == stopped:
			return recreate(f), true
		case f.seen == seenAbsent:
			return gone(f), true
		case f.desired == lifecycle.WantStopped && f.state == paused:
			return step{to: stopping, power: stopPower}, true
		case f.desired == lifecycle.WantStopped:
		case f.state == stopped && f.power == want && booted:
			return step{to: starting}, true
		case f.state == paused && f.desired == lifecycle.WantRunning && f.seen == seenRunning:
			return step{to: running}, true
		case f.power != want && f.desired == lifecycle.WantRunning:
			return step{power: want, reason: fmt.Sprintf("starting on host %s", f.host)}, true
		case f.power != want:
			return step{power: want}, true
		}
	case lost:
		if !f.hostAlive {
			return step{}, false
		}
		switch f.seen {
		case seenRunning:
			return step{to: running}, true
		case seenStopped:
			return step{to: stopped}, true
		case seenPaused:
			return step{to: paused}, true
		case seenFailed:
			return recreate(f), true
		}
	}
	return step{}, false
}

// recreate gives the instance up on a host that cannot start it.
func recreate(f facts) step {
	return step{to: lifecycle.Pending, recreate: true, power: removePower,
		reason: fmt.Sprintf("host %s could not start it (%s); placing it again", f.host, f.seenReason)}
}

// gone marks an instance its host no longer has.
func gone(f facts) step {
	return step{to: lifecycle.Lost, reason: fmt.Sprintf("host %s no longer reports it", f.host)}
}

func powerFor(d lifecycle.Desired) power {
	switch d {
	case lifecycle.WantRunning:
		return runPower
	case lifecycle.WantPaused:
		return pausePower
	}
	return stopPower
}
