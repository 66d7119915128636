package hostd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// converger makes a Runtime hold a NodeSpec, as the package documentation
// describes: each instance's converge step in a goroutine of its own,
// never two at once for one instance. It remembers the failed instances
// and the generation each instance was last converged to.
type converger struct {
	rt              Runtime
	shutdownTimeout time.Duration
	log             *slog.Logger
	metrics         *metrics
	// slots bounds the steps that run at once.
	slots chan struct{}
	// ended is signalled when a step ends.
	ended chan struct{}
	wg    sync.WaitGroup
	// skipped are the instances a converge found busy, to converge again
	// once their step ends; only the main loop uses it.
	skipped map[string]bool

	mu sync.Mutex
	// failed holds the failed instances, by ID.
	failed map[string]failure
	// busy holds the instances whose step is dispatched or runs.
	busy map[string]bool
	// defining holds the busy instances whose step defines their domain.
	defining map[string]bool
	// gens holds the spec generation each instance was last converged to.
	gens map[string]int64
}

func newConverger(rt Runtime, shutdownTimeout time.Duration, slots int, log *slog.Logger, m *metrics) *converger {
	return &converger{
		rt:              rt,
		metrics:         m,
		shutdownTimeout: shutdownTimeout,
		log:             log,
		slots:           make(chan struct{}, slots),
		ended:           make(chan struct{}, 1),
		skipped:         make(map[string]bool),
		failed:          make(map[string]failure),
		busy:            make(map[string]bool),
		defining:        make(map[string]bool),
		gens:            make(map[string]int64),
	}
}

// failure is a failed instance: the spec entry that failed, and why.
type failure struct {
	spec   hostproto.InstanceSpec
	reason string
	state  hostproto.State // failed, or invalid when the instance itself is at fault
}

// converge dispatches the converge steps that spec needs: of the instances
// of only (nil: every instance, and the domains not in spec). An instance
// whose step is busy is skipped, and converged again when its step ends
// (again). Its error is that of listing the domains.
func (c *converger) converge(ctx context.Context, spec hostproto.NodeSpec, only map[string]bool) error {
	// The busy set is taken before the listing: a step that ends between
	// the two would otherwise be judged on a listing made before it ended.
	c.mu.Lock()
	busy := maps.Clone(c.busy)
	c.mu.Unlock()
	doms, err := c.rt.Domains(ctx)
	if err != nil {
		c.runtimeFailed(ctx, "list")
		return fmt.Errorf("list domains: %w", err)
	}
	have := make(map[string]Domain, len(doms))
	for _, dom := range doms {
		have[dom.ID] = dom
	}
	want := make(map[string]bool, len(spec.Instances))
	for _, inst := range spec.Instances {
		want[inst.ID] = true
		if only != nil && !only[inst.ID] {
			continue
		}
		if busy[inst.ID] {
			c.skipped[inst.ID] = true
			continue
		}
		delete(c.skipped, inst.ID)
		dom, exists := have[inst.ID]
		gen := entryGeneration(inst, spec.Generation)
		if c.settled(inst, dom, exists, gen) {
			continue
		}
		c.dispatch(ctx, inst.ID, gen, !exists, func(ctx context.Context) { c.instance(ctx, inst, dom, exists) })
	}
	if only == nil {
		c.forgetOthers(want, have, busy)
	}
	for _, dom := range doms {
		switch {
		case want[dom.ID], only != nil && !only[dom.ID]:
		case busy[dom.ID]:
			c.skipped[dom.ID] = true
		default:
			c.dispatch(ctx, dom.ID, spec.Generation, false, func(ctx context.Context) { c.undefine(ctx, dom.ID) })
		}
	}
	return nil
}

// entryGeneration is the generation an instance's status speaks for once
// it is converged to inst, an entry of the spec of generation gen: the
// entry's own generation from version 5, which stays put while the entry
// does (so an unchanged status stays out of partial reports), else gen.
// Both tell the gateway the same: whether the host has converged to the
// entry it holds.
func entryGeneration(inst hostproto.InstanceSpec, gen int64) int64 {
	if inst.Generation > 0 {
		return inst.Generation
	}
	return gen
}

// forgetOthers forgets the failures of the instances not in want, and the
// generations of those that have no domain either.
func (c *converger) forgetOthers(want map[string]bool, have map[string]Domain, busy map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.failed {
		if !want[id] {
			delete(c.failed, id)
		}
	}
	for id := range c.gens {
		if _, exists := have[id]; !want[id] && !exists && !busy[id] {
			delete(c.gens, id)
		}
	}
}

// again returns the skipped instances whose step has ended, to converge
// again, and forgets them.
func (c *converger) again() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]bool)
	for id := range c.skipped {
		if !c.busy[id] {
			out[id] = true
			delete(c.skipped, id)
		}
	}
	return out
}

// settled reports whether inst needs no step: it failed with this very
// entry, or its domain is as its power wants. A settled instance is
// converged to gen at once.
func (c *converger) settled(inst hostproto.InstanceSpec, dom Domain, exists bool, gen int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.failed[inst.ID]; ok {
		if !reflect.DeepEqual(f.spec, inst) {
			delete(c.failed, inst.ID) // a new entry: try it afresh
			return false
		}
	} else if !exists || !powered(inst.Power, dom.State) {
		return false
	}
	c.gens[inst.ID] = gen
	return true
}

// powered reports whether a domain in state is as power wants it.
func powered(power hostproto.Power, state DomainState) bool {
	switch power {
	case hostproto.PowerRunning:
		return state == DomainRunning
	case hostproto.PowerStopped:
		return state == DomainStopped
	case hostproto.PowerPaused:
		return state == DomainPaused
	}
	return false
}

// dispatch runs step for instance id in a goroutine, once a slot is free;
// when it ends the instance is converged to gen. defining says that step
// defines its domain.
func (c *converger) dispatch(ctx context.Context, id string, gen int64, defining bool, step func(context.Context)) {
	c.mu.Lock()
	c.busy[id] = true
	c.defining[id] = defining
	c.mu.Unlock()
	c.wg.Go(func() {
		began := time.Now()
		select {
		case c.slots <- struct{}{}:
			step(ctx)
			c.metrics.step.Observe(time.Since(began).Seconds())
			<-c.slots
		case <-ctx.Done():
		}
		c.mu.Lock()
		delete(c.busy, id)
		delete(c.defining, id)
		if ctx.Err() == nil {
			c.gens[id] = gen
		}
		c.mu.Unlock()
		select {
		case c.ended <- struct{}{}:
		default:
		}
	})
}

// wait waits for the steps, once ctx has ended.
func (c *converger) wait() { c.wg.Wait() }

// undefine removes the domain id, which is not in the spec.
func (c *converger) undefine(ctx context.Context, id string) {
	if err := c.rt.Undefine(ctx, id); err != nil {
		c.warn(ctx, "undefine", id, err)
		return
	}
	c.log.Info("undefine", "instance", id)
}

// instance is the converge step of inst, whose domain is dom if it
// exists.
func (c *converger) instance(ctx context.Context, inst hostproto.InstanceSpec, dom Domain, exists bool) {
	if !exists {
		if err := c.rt.Define(ctx, inst); err != nil {
			c.runtimeFailed(ctx, "define")
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
		c.runtimeFailed(ctx, "start")
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
	c.mu.Lock()
	c.failed[inst.ID] = failure{spec: inst, reason: err.Error(), state: state}
	c.mu.Unlock()
	c.log.Warn("instance failed; not retried until its spec changes", "instance", inst.ID, "err", err)
}

// warn logs that op failed on domain id and is tried again at the next
// converge, unless the daemon is stopping.
func (c *converger) warn(ctx context.Context, op, id string, err error) {
	if ctx.Err() != nil {
		return
	}
	c.runtimeFailed(ctx, op)
	c.log.Warn(op+" failed; retried at the next converge", "instance", id, "err", err)
}

// runtimeFailed counts a failed runtime operation op, unless the daemon is
// stopping.
func (c *converger) runtimeFailed(ctx context.Context, op string) {
	if ctx.Err() == nil {
		c.metrics.runtimeErrors.WithLabelValues(op).Inc()
	}
}

// statuses lists, sorted by ID, the state of every domain of the Runtime,
// of every failed instance, and of every instance being defined, each
// with the generation it was last converged to. Failed overrides what the
// domain of a failed instance is doing; an instance with neither a domain,
// a failure nor a define under way is absent.
func (c *converger) statuses(ctx context.Context) ([]hostproto.InstanceStatus, error) {
	doms, err := c.rt.Domains(ctx)
	if err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]hostproto.InstanceStatus, 0, len(doms)+len(c.failed))
	listed := make(map[string]bool, len(doms))
	for _, dom := range doms {
		listed[dom.ID] = true
		if _, failed := c.failed[dom.ID]; failed {
			continue
		}
		s := hostproto.InstanceStatus{ID: dom.ID, Reason: dom.Reason, Generation: c.gens[dom.ID]}
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
		out = append(out, hostproto.InstanceStatus{ID: id, State: f.state, Reason: f.reason, Generation: c.gens[id]})
	}
	for id, defining := range c.defining {
		if _, failed := c.failed[id]; defining && !listed[id] && !failed {
			out = append(out, hostproto.InstanceStatus{ID: id, State: hostproto.StateDefining, Generation: c.gens[id]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
