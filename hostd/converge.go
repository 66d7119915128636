package hostd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// converger makes a Runtime hold a NodeSpec, as the package documentation
// describes. It remembers the failed instances between converges.
type converger struct {
	rt              Runtime
	shutdownTimeout time.Duration
	log             *slog.Logger
	// failed holds the failed instances, by ID.
	failed map[string]failure
}

// failure is a failed instance: the spec entry that failed, and why.
type failure struct {
	spec   hostproto.InstanceSpec
	reason string
	state  hostproto.State // failed, or invalid when the instance itself is at fault
}

// converge converges the Runtime to spec. Its error is that of listing the
// domains; what fails for one instance is recorded or logged, and the other
// instances are converged all the same.
func (c *converger) converge(ctx context.Context, spec hostproto.NodeSpec) error {
	doms, err := c.rt.Domains(ctx)
	if err != nil {
		return fmt.Errorf("list domains: %w", err)
	}
	have := make(map[string]Domain, len(doms))
	for _, dom := range doms {
		have[dom.ID] = dom
	}
	want := make(map[string]bool, len(spec.Instances))
	for _, inst := range spec.Instances {
		want[inst.ID] = true
		c.instance(ctx, inst, have)
	}
	for id := range c.failed {
		if !want[id] {
			delete(c.failed, id)
		}
	}
	for _, dom := range doms {
		if want[dom.ID] {
			continue
		}
		if err := c.rt.Undefine(ctx, dom.ID); err != nil {
			c.warn(ctx, "undefine", dom.ID, err)
			continue
		}
		c.log.Info("undefine", "instance", dom.ID)
	}
	return nil
}

// instance converges one instance; have holds the domains by ID.
func (c *converger) instance(ctx context.Context, inst hostproto.InstanceSpec, have map[string]Domain) {
	if f, ok := c.failed[inst.ID]; ok {
		if reflect.DeepEqual(f.spec, inst) {
			return
		}
		delete(c.failed, inst.ID) // a new entry: try it afresh
	}
	dom, ok := have[inst.ID]
	if !ok {
		if err := c.rt.Define(ctx, inst); err != nil {
			c.fail(ctx, inst, err)
			return
		}
		c.log.Info("define", "instance", inst.ID)
		dom = Domain{ID: inst.ID, State: DomainStopped}
	}

	switch inst.Power {
	case hostproto.PowerRunning:
		switch dom.State {
		case DomainStopped:
			c.start(ctx, inst)
		case DomainPaused:
			c.call(ctx, "resume", inst.ID, c.rt.Resume)
		}
	case hostproto.PowerStopped:
		if dom.State != DomainStopped {
			c.call(ctx, "shutdown", inst.ID, c.shutdown)
		}
	case hostproto.PowerPaused:
		switch dom.State {
		case DomainStopped:
			if c.start(ctx, inst) {
				c.pauseBooted(ctx, inst.ID)
			}
		case DomainRunning:
			c.pauseBooted(ctx, inst.ID)
		}
	default:
		c.fail(ctx, inst, fmt.Errorf("instance %s: unknown power %q", inst.ID, inst.Power))
	}
}

// start starts inst, and reports whether it did; a failure fails inst.
func (c *converger) start(ctx context.Context, inst hostproto.InstanceSpec) bool {
	if err := c.rt.Start(ctx, inst.ID); err != nil {
		c.fail(ctx, inst, err)
		return false
	}
	c.log.Info("start", "instance", inst.ID)
	return true
}

// pauseBooted pauses the running domain id once its guest has booted; until
// then it leaves it running, and a later converge pauses it.
func (c *converger) pauseBooted(ctx context.Context, id string) {
	booted, err := c.rt.Booted(ctx, id)
	switch {
	case err != nil:
		c.warn(ctx, "pause", id, fmt.Errorf("has it booted: %w", err))
	case !booted:
		c.log.Debug("booting; paused once booted", "instance", id)
	default:
		c.call(ctx, "pause", id, c.rt.Pause)
	}
}

func (c *converger) shutdown(ctx context.Context, id string) error {
	return c.rt.Shutdown(ctx, id, c.shutdownTimeout)
}

// call calls fn, the operation op, on domain id, and logs the outcome.
func (c *converger) call(ctx context.Context, op, id string, fn func(context.Context, string) error) {
	if err := fn(ctx, id); err != nil {
		c.warn(ctx, op, id, err)
		return
	}
	c.log.Info(op, "instance", id)
}

// fail records that inst failed with err, unless the daemon is stopping
// (then err is most likely the end of ctx, not the instance's fault).
func (c *converger) fail(ctx context.Context, inst hostproto.InstanceSpec, err error) {
	if ctx.Err() != nil {
		return
	}
	state := hostproto.StateFailed
	if errors.Is(err, ErrInvalid) {
		state = hostproto.StateInvalid
	}
	c.failed[inst.ID] = failure{spec: inst, reason: err.Error(), state: state}
	c.log.Warn("instance failed; not retried until its spec changes", "instance", inst.ID, "err", err)
}

// warn logs that op failed on domain id and is tried again at the next
// converge, unless the daemon is stopping.
func (c *converger) warn(ctx context.Context, op, id string, err error) {
	if ctx.Err() != nil {
		return
	}
	c.log.Warn(op+" failed; retried at the next converge", "instance", id, "err", err)
}

// statuses lists, sorted by ID, the state of every domain of the Runtime and
// of every failed instance. Failed overrides what the domain of a failed
// instance is doing; an instance with neither a domain nor a failure is
// absent.
func (c *converger) statuses(ctx context.Context) ([]hostproto.InstanceStatus, error) {
	doms, err := c.rt.Domains(ctx)
	if err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	out := make([]hostproto.InstanceStatus, 0, len(doms)+len(c.failed))
	for _, dom := range doms {
		if _, failed := c.failed[dom.ID]; failed {
			continue
		}
		s := hostproto.InstanceStatus{ID: dom.ID, Reason: dom.Reason}
		switch dom.State {
		case DomainRunning:
			s.State = hostproto.StateRunning
		case DomainStopped:
			s.State = hostproto.StateStopped
		case DomainPaused:
			s.State = hostproto.StatePaused
		default:
			c.log.Warn("domain in an unknown state is not reported", "instance", dom.ID, "state", dom.State)
			continue
		}
		out = append(out, s)
	}
	for id, f := range c.failed {
		out = append(out, hostproto.InstanceStatus{ID: id, State: f.state, Reason: f.reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
