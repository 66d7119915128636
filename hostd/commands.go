package hostd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/better-compute/vps/hostproto"
)

// Why a command's run is stopped before it ends (its context's cause).
var (
	errAbandoned = errors.New("abandoned")
	errDeadline  = errors.New("deadline passed")
	errLeftSpec  = errors.New("left the spec")
)

// afterUndo is what becomes of a command once undone.
type afterUndo int

const (
	// abandon it: it is journaled and reported abandoned.
	abandonAfter afterUndo = iota
	// fail it, its deadline passed.
	failAfter
	// forget it: it left the spec.
	forgetAfter
)

// commander runs the commands of the spec, as the package documentation
// describes: each in its lane, at most once by its ID, journaled.
type commander struct {
	rt      Runtime
	journal *journal
	log     *slog.Logger
	// lanes are the lanes' slots: a run holds one of its lane's while it
	// works.
	lanes map[hostproto.Lane]chan struct{}
	// changed is signalled when a command's state changes.
	changed chan struct{}
	wg      sync.WaitGroup

	mu   sync.Mutex
	cmds map[string]*command
}

// command is one command the daemon knows.
type command struct {
	cmd    hostproto.Command
	status hostproto.CommandStatus
	// busy: a goroutine runs or undoes it; only that goroutine changes its
	// status then.
	busy bool
	// cancel stops its run, with a cause; nil unless it runs.
	cancel context.CancelCauseFunc
}

// newCommander returns a commander over the journal in dir ("" for none),
// knowing what the journal holds.
func newCommander(rt Runtime, dir string, interactive, bulk int, log *slog.Logger) (*commander, error) {
	j, entries, err := openJournal(dir)
	if err != nil {
		return nil, err
	}
	c := &commander{
		rt:      rt,
		journal: j,
		log:     log,
		lanes: map[hostproto.Lane]chan struct{}{
			hostproto.LaneInteractive: make(chan struct{}, interactive),
			hostproto.LaneBulk:        make(chan struct{}, bulk),
		},
		changed: make(chan struct{}, 1),
		cmds:    make(map[string]*command, len(entries)),
	}
	for id, e := range entries {
		c.cmds[id] = &command{cmd: e.Command, status: e.Status}
	}
	return c, nil
}

// sync makes the commands the daemon works on those of spec: it starts the
// new ones and those journaled running (after a restart), abandons those
// the spec says to, and stops, undoes and forgets those that left it.
// Called at every spec and heartbeat, it also retries an undo that failed.
func (c *commander) sync(ctx context.Context, spec []hostproto.Command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inSpec := make(map[string]bool, len(spec))
	for _, cmd := range spec {
		inSpec[cmd.ID] = true
		k, known := c.cmds[cmd.ID]
		if !known {
			k = c.admit(cmd)
		}
		k.cmd.Abandon = k.cmd.Abandon || cmd.Abandon
		switch {
		case k.busy:
			if k.cmd.Abandon && k.cancel != nil {
				k.cancel(errAbandoned)
			}
		case k.cmd.Abandon && k.status.State != hostproto.CommandAbandoned:
			c.goUndo(ctx, k, abandonAfter)
		case k.status.State == hostproto.CommandRunning:
			c.goRun(ctx, k)
		}
	}
	for id, k := range c.cmds {
		switch {
		case inSpec[id]:
		case k.busy:
			if k.cancel != nil {
				k.cancel(errLeftSpec)
			}
		case k.status.State == hostproto.CommandRunning:
			c.goUndo(ctx, k, forgetAfter) // it never ended: undo what it may have made
		default:
			c.forget(k)
		}
	}
}

// admit makes cmd known, journaled running, or failed at once when the
// daemon cannot run it; c.mu is held.
func (c *commander) admit(cmd hostproto.Command) *command {
	k := &command{cmd: cmd, status: hostproto.CommandStatus{ID: cmd.ID, State: hostproto.CommandRunning}}
	c.cmds[cmd.ID] = k
	var reason string
	if err := checkCommandID(cmd.ID); err != nil {
		reason = err.Error()
	} else if _, ok := kinds[cmd.Kind]; !ok {
		reason = fmt.Sprintf("unknown command kind %q", cmd.Kind)
	} else if _, ok := c.lanes[cmd.Lane]; !ok {
		reason = fmt.Sprintf("unknown lane %q", cmd.Lane)
	} else if err := c.journal.write(entry{Command: cmd, Status: k.status}); err != nil {
		// Not run: unjournaled, it could run twice. A restarted daemon
		// tries afresh.
		reason = err.Error()
	}
	if reason != "" {
		k.status.State, k.status.Error = hostproto.CommandFailed, reason
		c.log.Warn("command failed", "command", cmd.ID, "kind", cmd.Kind, "err", reason)
		c.signal()
	}
	return k
}

// goRun runs k in a goroutine, until its deadline; c.mu is held.
func (c *commander) goRun(ctx context.Context, k *command) {
	runCtx, cancel := context.WithCancelCause(ctx)
	stop := func() {}
	if !k.cmd.Deadline.IsZero() {
		runCtx, stop = context.WithDeadlineCause(runCtx, k.cmd.Deadline, errDeadline)
	}
	k.busy, k.cancel = true, cancel
	c.log.Info("command started", "command", k.cmd.ID, "kind", k.cmd.Kind, "lane", k.cmd.Lane)
	c.wg.Go(func() {
		defer cancel(nil)
		defer stop()
		result, err := c.run(runCtx, k)
		var cause error
		if runCtx.Err() != nil {
			cause = context.Cause(runCtx)
		}
		c.mu.Lock()
		k.cancel = nil
		c.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			// The daemon stops: k stays journaled running, to run again.
			c.idle(k)
		case errors.Is(cause, errAbandoned):
			c.undo(ctx, k, abandonAfter)
		case errors.Is(cause, errLeftSpec):
			c.undo(ctx, k, forgetAfter)
		case err == nil:
			c.finish(k, hostproto.CommandStatus{State: hostproto.CommandSucceeded, Result: result})
		case errors.Is(cause, errDeadline):
			c.undo(ctx, k, failAfter)
		default:
			c.finish(k, hostproto.CommandStatus{State: hostproto.CommandFailed, Error: err.Error()})
		}
	})
}

// run waits for a slot of k's lane, then does k's work.
func (c *commander) run(ctx context.Context, k *command) ([]byte, error) {
	lane := c.lanes[k.cmd.Lane]
	select {
	case lane <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-lane }()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return kinds[k.cmd.Kind].run(ctx, c.rt, k.cmd.Payload)
}

// goUndo undoes k in a goroutine; c.mu is held.
func (c *commander) goUndo(ctx context.Context, k *command, then afterUndo) {
	k.busy = true
	c.wg.Go(func() { c.undo(ctx, k, then) })
}

// undo removes what k made, then does with k what then says. An undo that
// fails leaves k as it was, for the next sync to try again.
func (c *commander) undo(ctx context.Context, k *command, then afterUndo) {
	undo := noUndo
	if kd, ok := kinds[k.cmd.Kind]; ok {
		undo = kd.undo
	}
	if err := undo(ctx, c.rt, k.cmd.Payload); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("command cleanup failed; retried at the next heartbeat", "command", k.cmd.ID, "err", err)
		}
		c.idle(k)
		return
	}
	switch then {
	case forgetAfter:
		c.mu.Lock()
		k.busy = false
		c.forget(k)
		c.mu.Unlock()
	case failAfter:
		c.finish(k, hostproto.CommandStatus{State: hostproto.CommandFailed, Error: errDeadline.Error()})
	default:
		c.finish(k, hostproto.CommandStatus{State: hostproto.CommandAbandoned})
	}
}

// finish journals k's final status and signals the change. When the
// journal cannot be written k stays running, to end again after the next
// restart, rather than be reported with an end the journal does not hold.
func (c *commander) finish(k *command, st hostproto.CommandStatus) {
	st.ID = k.cmd.ID
	c.mu.Lock()
	defer c.mu.Unlock()
	k.busy = false
	if err := c.journal.write(entry{Command: k.cmd, Status: st}); err != nil {
		c.log.Error("command ended but its end is not journaled", "command", k.cmd.ID, "state", st.State, "err", err)
		return
	}
	k.status = st
	c.log.Info("command "+string(st.State), "command", k.cmd.ID, "kind", k.cmd.Kind, "err", st.Error)
	c.signal()
}

// idle marks k as no goroutine's.
func (c *commander) idle(k *command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k.busy = false
}

// forget removes k from the journal and from memory; c.mu is held. A
// journal that cannot be written keeps it, for the next sync to try again.
func (c *commander) forget(k *command) {
	if err := c.journal.remove(k.cmd.ID); err != nil {
		c.log.Warn("command not forgotten", "command", k.cmd.ID, "err", err)
		return
	}
	delete(c.cmds, k.cmd.ID)
}

// statuses returns the status of each command of spec the daemon knows,
// in spec's order.
func (c *commander) statuses(spec []hostproto.Command) []hostproto.CommandStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []hostproto.CommandStatus
	for _, cmd := range spec {
		if k, ok := c.cmds[cmd.ID]; ok {
			out = append(out, k.status)
		}
	}
	return out
}

// signal signals changed without blocking.
func (c *commander) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// wait waits for the goroutines of the commands, once ctx has ended.
func (c *commander) wait() { c.wg.Wait() }
