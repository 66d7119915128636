package client

import (
	"context"
	"fmt"
)

// Wait follows instance id's events (a subscription, not polling) until it
// is in state, and returns it as it was then. onState, if set, is told of
// each state as it happens, the current one first. It fails with a
// *StateError when the instance ends where state cannot follow: ERROR or
// LOST, or DELETED when state is not DELETED.
func (c *Client) Wait(ctx context.Context, id string, state InstanceState, onState func(InstanceFields)) (InstanceFields, error) {
	ws, errs, err := c.Live(ctx)
	if err != nil {
		return InstanceFields{}, err
	}
	current := true
	events, _, err := InstanceEvents(ctx, ws, &InstanceEventFilter{Ids: []string{id}}, &current)
	if err != nil {
		ws.Close()
		return InstanceFields{}, apiError(err)
	}
	defer CloseDraining(ws, events)
	// Read once too: an unknown id is NOT_FOUND at once, and a deleted
	// instance, which the subscription's current state leaves out, ends
	// the wait here.
	got, err := GetInstance(ctx, c, id)
	if err != nil {
		return InstanceFields{}, err
	}
	if inst := got.Instance.InstanceFields; inst.State == state || ended(inst.State, state) {
		return settled(inst, state, onState)
	}
	var last InstanceFields
	for {
		select {
		case <-ctx.Done():
			if last.Id == "" {
				last = got.Instance.InstanceFields
			}
			return last, &StateError{Instance: last, Want: state, Err: ctx.Err()}
		case err := <-errs:
			return last, fmt.Errorf("follow instance %s: %w", id, err)
		case ev, ok := <-events:
			if !ok {
				return last, fmt.Errorf("follow instance %s: the subscription ended", id)
			}
			if len(ev.Errors) > 0 {
				return last, apiError(ev.Errors)
			}
			inst := ev.Data.InstanceEvents.Instance.InstanceFields
			if onState != nil && inst.State != last.State {
				onState(inst)
			}
			last = inst
			if inst.State == state || ended(inst.State, state) {
				return settled(inst, state, nil)
			}
		}
	}
}

// settled is Wait's answer for an instance in a state it stops at:
// reached, or ended where state cannot follow.
func settled(inst InstanceFields, state InstanceState, onState func(InstanceFields)) (InstanceFields, error) {
	if onState != nil {
		onState(inst)
	}
	if inst.State != state {
		return inst, &StateError{Instance: inst, Want: state}
	}
	return inst, nil
}

// ended reports whether an instance in state is where want can no longer
// follow.
func ended(state, want InstanceState) bool {
	switch state {
	case InstanceStateError, InstanceStateLost:
		return true
	case InstanceStateDeleted:
		return want != InstanceStateDeleted
	}
	return false
}

// StateError is Wait's failure: the instance ended in a state the wanted
// one cannot follow, or was still in another when ctx ended (Err).
type StateError struct {
	Instance InstanceFields
	Want     InstanceState
	// Err is why the wait stopped early (ctx's error); nil when the
	// instance ended.
	Err error
}

func (e *StateError) Error() string {
	msg := fmt.Sprintf("instance %s is %s, not %s", e.Instance.Name, e.Instance.State, e.Want)
	if e.Instance.StateReason != nil {
		msg += ": " + *e.Instance.StateReason
	}
	if e.Err != nil {
		msg += " (stopped waiting: " + e.Err.Error() + ")"
	}
	return msg
}

func (e *StateError) Unwrap() error { return e.Err }
