package reconciler

import (
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/lifecycle"
)

// statusAbsent is what a sweep records for a server it no longer lists.
const statusAbsent cloud.Status = "absent"

// providerFacts are what the next step of a provider-pool instance depends on.
type providerFacts struct {
	state   lifecycle.State
	desired lifecycle.Desired
	// server: a server was made for it and not yet deleted.
	server bool
	// status is the server's, as the last call or sweep saw it.
	status cloud.Status
}

// call is the request a step makes of the provider.
type call int

const (
	noCall call = iota
	callCreate
	callStart
	callStop
	callDelete
	callReboot
)

func (c call) String() string {
	return [...]string{"none", "create", "start", "stop", "delete", "reboot"}[c]
}

// providerStep is one thing to do to a provider-pool instance: a call, then
// a move to a state ("" keeps it). The state a create moves to is decided
// by its result.
type providerStep struct {
	call   call
	to     lifecycle.State
	reason string
	// release frees what the instance holds: it is deleted.
	release bool
}

// decideProvider returns the next step for a provider-pool instance, if
// there is one. Like decide it is level-based, and a call it asks for is
// safe to repeat: a crash before the step commits makes the same call again.
func decideProvider(f providerFacts) (providerStep, bool) {
	const (
		pending, provisioning, starting, running = lifecycle.Pending, lifecycle.Provisioning, lifecycle.Starting, lifecycle.Running
		stopping, stopped, deleting, deleted     = lifecycle.Stopping, lifecycle.Stopped, lifecycle.Deleting, lifecycle.Deleted
		lost, errored, rebooting                 = lifecycle.Lost, lifecycle.Error, lifecycle.Rebooting
	)
	if f.state == deleted {
		return providerStep{}, false
	}
	if f.desired == lifecycle.WantDeleted || f.state == deleting {
		switch {
		case f.server:
			return providerStep{call: callDelete, to: deleting}, true
		case f.state == deleting:
			return providerStep{to: deleted, release: true}, true
		}
		return providerStep{to: deleting}, true
	}
	switch f.state {
	case pending:
		return providerStep{call: callCreate}, true
	case errored:
		return providerStep{}, false
	case lost:
		// Its server is listed again (a provider's hiccup, a migration).
		switch {
		case f.server && f.status == cloud.StatusRunning:
			return providerStep{to: running, reason: "its server is back"}, true
		case f.server && f.status == cloud.StatusStopped:
			return providerStep{to: stopped, reason: "its server is back"}, true
		}
		return providerStep{}, false
	}
	if f.server && f.status == statusAbsent {
		return providerStep{to: lost, reason: "its server no longer exists at the provider"}, true
	}
	on, off := f.status == cloud.StatusRunning, f.status == cloud.StatusStopped
	wantOn := f.desired == lifecycle.WantRunning
	switch f.state {
	case provisioning:
		switch {
		case on:
			return providerStep{to: starting}, true
		case off && wantOn:
			return providerStep{call: callStart, to: starting}, true
		case off:
			return providerStep{to: stopped}, true
		}
	case starting:
		switch {
		case on:
			return providerStep{to: running}, true
		case off:
			return providerStep{call: callStart, reason: "starting its server again"}, true
		}
	case running:
		switch {
		case !wantOn:
			return providerStep{call: callStop, to: stopping}, true
		case off:
			return providerStep{call: callStart, reason: "its server was stopped at the provider; starting it again"}, true
		}
	case rebooting:
		// One call: the provider reboots the guest, which runs throughout.
		if on {
			return providerStep{call: callReboot, to: running}, true
		}
		return providerStep{to: running, reason: "not rebooted: its server was not running at the provider"}, true
	case stopping:
		switch {
		case off:
			return providerStep{to: stopped}, true
		case on:
			return providerStep{call: callStop}, true
		}
	case stopped:
		switch {
		case wantOn:
			return providerStep{call: callStart, to: starting}, true
		case on:
			return providerStep{call: callStop, reason: "its server was started at the provider; stopping it again"}, true
		}
	}
	return providerStep{}, false
}
