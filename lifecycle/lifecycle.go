// Package lifecycle is the instance state model: the states an instance can
// be in, the states a tenant can ask for, and the one table of transitions
// the reconciler may apply.
package lifecycle

// State is where an instance actually is.
type State string

// The states of an instance.
const (
	Pending      State = "PENDING"
	Provisioning State = "PROVISIONING"
	Starting     State = "STARTING"
	Running      State = "RUNNING"
	Stopping     State = "STOPPING"
	Stopped      State = "STOPPED"
	Paused       State = "PAUSED"
	Rebooting    State = "REBOOTING"
	Deleting     State = "DELETING"
	Deleted      State = "DELETED"
	Error        State = "ERROR"
	Lost         State = "LOST"
)

// States lists every state, in lifecycle order.
var States = []State{Pending, Provisioning, Starting, Running, Stopping, Stopped, Paused, Rebooting, Deleting, Deleted, Error, Lost}

// Desired is what a tenant asked for. Paused is used only by sandbox warm pools.
type Desired string

// The desired states.
const (
	WantRunning Desired = "RUNNING"
	WantStopped Desired = "STOPPED"
	WantPaused  Desired = "PAUSED"
	WantDeleted Desired = "DELETED"
)

// transitions is the state table. Every state but DELETED and DELETING may
// move to DELETING; STARTING may end PAUSED (a warm instance of a sandbox
// template boots, then pauses); PROVISIONING and STOPPED may recreate (back to PENDING,
// placed again) when their host cannot start them; LOST returns to what the
// host reports when the instance reappears.
var transitions = map[State][]State{
	Pending:      {Provisioning, Deleting, Error},
	Provisioning: {Starting, Stopped, Pending, Deleting, Error, Lost},
	Starting:     {Running, Paused, Deleting, Error, Lost},
	Running:      {Stopping, Paused, Rebooting, Deleting, Error, Lost},
	Stopping:     {Stopped, Deleting, Error, Lost},
	Stopped:      {Starting, Pending, Deleting, Error, Lost},
	Paused:       {Running, Stopping, Deleting, Error, Lost},
	Rebooting:    {Running, Deleting, Error, Lost},
	Deleting:     {Deleted, Error},
	Deleted:      {},
	Error:        {Pending, Deleting},
	Lost:         {Pending, Running, Stopped, Paused, Deleting, Error},
}

// CanTransition reports whether the state table allows from → to.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Valid reports whether d is a desired state.
func (d Desired) Valid() bool {
	switch d {
	case WantRunning, WantStopped, WantPaused, WantDeleted:
		return true
	}
	return false
}
