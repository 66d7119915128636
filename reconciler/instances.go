package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// TopicEvents is the outbox topic of events that need no further work.
const TopicEvents = vps.TopicEvents

// errRace is a compare-and-set that lost; the instance is simply read again.
var errRace = errors.New("instance changed underneath")

// instances is the vps.instances kind: it moves each instance toward its
// desired state one guarded transition at a time. Hosted and provider
// pools take their steps differently; which way is chosen once per pool.
type instances struct {
	r *Reconciler
	// steps maps a pool's ID to its stepFunc: a pool never changes its
	// class or its provider account.
	steps sync.Map
}

// stepFunc takes one step for an instance whose row q's transaction
// locked (locked, with what LockInstanceStep read beside it), and reports
// whether another step may follow at once.
type stepFunc func(ctx context.Context, q *sqlc.Queries, locked sqlc.LockInstanceStepRow, wake *[]uuid.UUID) (again bool, err error)

// Reconcile takes one step for the instance req names.
func (k *instances) Reconcile(ctx context.Context, req Request) (Result, error) {
	id, err := uuid.Parse(req.Key)
	if err != nil {
		return Result{}, Terminal(fmt.Errorf("instance id %q: %w", req.Key, err))
	}
	again, err := k.converge(ctx, id)
	switch {
	case errors.Is(err, errRace):
		return Result{Requeue: true}, nil
	case err != nil && ctx.Err() == nil:
		reason, wait := retryReason(err)
		k.r.recordFailure(ctx, id, reason)
		return Result{RequeueAfter: wait}, err
	case err != nil:
		return Result{}, err
	}
	return Result{Requeue: again}, nil
}

// converge takes one step for an instance, in one transaction under its row
// lock, and reports whether another step may follow at once.
func (k *instances) converge(ctx context.Context, id uuid.UUID) (again bool, err error) {
	var wake []uuid.UUID
	err = pgx.BeginFunc(ctx, k.r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		locked, err := q.LockInstanceStep(ctx, sqlc.LockInstanceStepParams{ID: id, SilentAfter: k.r.cfg.HostSilentAfter.Seconds()})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock instance: %w", err)
		}
		step, err := k.stepOf(ctx, q, locked.Instance.PoolID)
		if err != nil {
			return err
		}
		again, err = step(ctx, q, locked, &wake)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("converge instance %s: %w", ids.Log(ids.Instance, id), err)
	}
	k.r.wakeHosts(ctx, wake)
	return again, nil
}

// stepOf returns how the instances of a pool take their steps.
func (k *instances) stepOf(ctx context.Context, q *sqlc.Queries, pool uuid.UUID) (stepFunc, error) {
	if step, ok := k.steps.Load(pool); ok {
		return step.(stepFunc), nil
	}
	acct, err := q.PoolProviderAccount(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("read pool %s: %w", ids.Log(ids.Pool, pool), err)
	}
	step := stepFunc(k.r.hostedStep)
	if acct != nil {
		id := *acct
		step = func(ctx context.Context, q *sqlc.Queries, locked sqlc.LockInstanceStepRow, _ *[]uuid.UUID) (bool, error) {
			return k.r.convergeProvider(ctx, q, locked.Instance, id)
		}
	}
	k.steps.Store(pool, step)
	return step, nil
}

// hostedStep takes the steps of an instance of a hosted pool that follow
// one another without news from its host (placement, or a change of what its
// host is told to hold), up to maxSteps, in the transaction of q: after each
// it decides again on the row the step wrote, so a host's report that lets
// an instance go PROVISIONING → STARTING → RUNNING costs one transaction,
// not three (two of them finding nothing to do). It reports whether another
// step may follow at once: only when it stopped at maxSteps or after giving
// up a host, whose next step (placing again) is left to a transaction of its
// own. Its host's liveness and its addresses come with the row lock. The
// steps' events are written together, in one statement, at the end.
func (r *Reconciler) hostedStep(ctx context.Context, q *sqlc.Queries, locked sqlc.LockInstanceStepRow, wake *[]uuid.UUID) (bool, error) {
	var out events.Outbox
	again, err := r.hostedSteps(ctx, q, locked, &out, wake)
	if err != nil {
		return false, err
	}
	return again, out.Write(ctx, q)
}

// hostedSteps takes hostedStep's steps, their events into out.
func (r *Reconciler) hostedSteps(ctx context.Context, q *sqlc.Queries, locked sqlc.LockInstanceStepRow, out *events.Outbox, wake *[]uuid.UUID) (bool, error) {
	inst := locked.Instance
	var (
		hosts hostCache
		addrs addresses
	)
	if err := lockedFacts(ctx, q, locked, &hosts, &addrs); err != nil {
		return false, err
	}
	for i := range maxSteps {
		f, err := r.facts(ctx, q, inst, &hosts)
		if err != nil {
			return false, err
		}
		st, ok := decide(f)
		if !ok {
			return false, nil
		}
		if i == 0 {
			if err := wakeUpkeep(ctx, q, inst); err != nil {
				return false, err
			}
		}
		if st.place {
			// Placement's wait writes its event itself: those of the
			// steps before go first.
			if err := out.Write(ctx, q); err != nil {
				return false, err
			}
			var placed bool
			if inst, placed, err = r.place(ctx, q, inst, &hosts, &addrs, out, wake); err != nil || !placed {
				return false, err
			}
			continue
		}
		if st.reboot {
			if inst, err = r.queueReboot(ctx, q, inst, &addrs, out, wake); err != nil {
				return false, err
			}
			continue
		}
		if inst, err = r.apply(ctx, q, inst, st, &addrs, out, wake); err != nil {
			return false, err
		}
		if st.recreate {
			return true, nil
		}
	}
	return true, nil
}

// maxSteps bounds the steps hostedStep takes in one transaction; the state
// table has no longer chain without the host's news.
const maxSteps = 4

// hostCache holds what one transaction read of hosts' liveness: a host's
// row does not change under the instance's lock in a way its steps depend
// on, so each host is read once.
type hostCache map[uuid.UUID]sqlc.HostLivenessRow

// addresses is what one transaction knows of an instance's live leases
// (its addresses), read with its row lock (lockedFacts), so that the events of its steps
// do not each read them: they change only when a placement leases one or a
// deletion releases them.
type addresses struct {
	leases []sqlc.IpLease
}

// set records the instance's live leases.
func (a *addresses) set(leases []sqlc.IpLease) { a.leases = leases }

// lockedFacts records what LockInstanceStep read beside the row lock: the
// host's liveness in hosts and the live leases in addrs. When they are not
// fresh (the row changed while its lock was waited for), it reads the
// leases again and leaves the host to facts, which reads it.
func lockedFacts(ctx context.Context, q *sqlc.Queries, locked sqlc.LockInstanceStepRow, hosts *hostCache, addrs *addresses) error {
	inst := locked.Instance
	if !locked.Fresh {
		leases, err := q.ListLiveLeases(ctx, []uuid.UUID{inst.ID})
		if err != nil {
			return fmt.Errorf("read addresses: %w", err)
		}
		addrs.set(leases)
		return nil
	}
	if inst.HostID != nil {
		*hosts = hostCache{*inst.HostID: {ID: *inst.HostID, Name: locked.HostName, PoolID: inst.PoolID, Alive: locked.HostAlive}}
	}
	// What the steps read of a lease: the address (the events') and the MAC
	// (placement's, when it keeps the lease of an earlier one).
	var leases []sqlc.IpLease
	for i, a := range locked.LeaseAddresses {
		leases = append(leases, sqlc.IpLease{Address: a, Mac: locked.LeaseMacs[i], InstanceID: inst.ID})
	}
	addrs.set(leases)
	return nil
}

func (r *Reconciler) facts(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, hosts *hostCache) (facts, error) {
	f := facts{
		state:      lifecycle.State(inst.State),
		desired:    lifecycle.Desired(inst.DesiredState),
		power:      powerOf(inst.SpecPower),
		seenReason: inst.ObservedReason,
	}
	if inst.ObservedState != nil {
		f.seen = *inst.ObservedState
	}
	if inst.HostID == nil {
		return f, nil
	}
	h, ok := (*hosts)[*inst.HostID]
	if !ok {
		var err error
		h, err = q.HostLiveness(ctx, sqlc.HostLivenessParams{ID: *inst.HostID, SilentAfter: r.cfg.HostSilentAfter.Seconds()})
		if err != nil {
			return f, fmt.Errorf("read host: %w", err)
		}
		if *hosts == nil {
			*hosts = hostCache{}
		}
		(*hosts)[*inst.HostID] = h
	}
	f.placed, f.hostAlive, f.host = true, h.Alive, h.Name
	return f, rebootFacts(ctx, q, inst, &f)
}

// apply carries out a step other than placement and returns the row it
// wrote.
func (r *Reconciler) apply(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, st step, addrs *addresses, out *events.Outbox, wake *[]uuid.UUID) (sqlc.Instance, error) {
	p := sqlc.TransitionParams{
		ID: inst.ID, FromState: inst.State, FromVersion: inst.Version,
		ToState: inst.State, StateReason: st.reason,
		HostID: inst.HostID, SpecPower: inst.SpecPower, SpecGeneration: inst.SpecGeneration, Mac: inst.Mac,
		AvoidHostID: inst.AvoidHostID, ObservedState: inst.ObservedState, ObservedReason: inst.ObservedReason,
		HostCertified: inst.HostCertified, HostCertValidBefore: inst.HostCertValidBefore,
	}
	if st.to != "" {
		p.ToState = string(st.to)
	}
	if st.reason == "" && !st.recreate && !st.release {
		reason, err := gpuReason(ctx, q, inst)
		if err != nil {
			return sqlc.Instance{}, err
		}
		p.StateReason = reason
	}
	// Released before the host's generation is bumped: a release writes the
	// host's usage row (host_usage) and a placement writes it before the
	// host's row, so both take the two in one order.
	if st.recreate || st.release {
		if err := r.release(ctx, q, inst, st.release); err != nil {
			return sqlc.Instance{}, err
		}
		if st.release {
			addrs.set(nil)
		}
	}
	if st.power != keepPower {
		p.SpecPower = st.power.spec()
		p.ObservedState, p.ObservedReason = nil, ""
		if inst.HostID != nil {
			gen, err := q.BumpHostGeneration(ctx, *inst.HostID)
			if err != nil {
				return sqlc.Instance{}, fmt.Errorf("bump host generation: %w", err)
			}
			p.SpecGeneration = gen
			*wake = append(*wake, *inst.HostID)
		}
	}
	if st.recreate {
		p.AvoidHostID, p.HostID = inst.HostID, nil
		p.HostCertified, p.HostCertValidBefore = false, nil
	}
	return transition(ctx, q, p, addrs, out)
}

// transition makes the one guarded write of a step: it refuses a change
// of state the state table does not allow, compares and sets on the state
// and version read under the row lock, and writes the change's event. It
// returns the row written. The event's addresses are those addrs knows,
// and it goes into out, written with the other steps' (Outbox.Write); with
// addrs nil, it reads them and writes the event at once.
func transition(ctx context.Context, q *sqlc.Queries, p sqlc.TransitionParams, addrs *addresses, out *events.Outbox) (sqlc.Instance, error) {
	from, to := lifecycle.State(p.FromState), lifecycle.State(p.ToState)
	if from != to && !lifecycle.CanTransition(from, to) {
		return sqlc.Instance{}, fmt.Errorf("transition %s → %s is not in the state table", from, to)
	}
	row, err := q.Transition(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlc.Instance{}, errRace
	}
	if err != nil {
		return sqlc.Instance{}, fmt.Errorf("transition %s → %s: %w", from, to, err)
	}
	typ := events.Updated
	if row.State == string(lifecycle.Deleted) {
		typ = events.Deleted
	}
	if addrs == nil {
		return row, events.Enqueue(ctx, q, TopicEvents, typ, row)
	}
	return row, out.EnqueueLeased(ctx, q, TopicEvents, typ, row, addrs.leases)
}

// gpuReason is the state reason an instance keeps while it holds a device
// a fatal Xid marked unhealthy (domain.GPUFailedReason), so a step that
// gives no reason of its own does not hide it; "" otherwise.
func gpuReason(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance) (string, error) {
	if inst.GpuCount == 0 || inst.HostID == nil {
		return "", nil
	}
	bad, err := q.UnhealthyClaim(ctx, inst.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read its devices' health: %w", err)
	}
	var reason string
	if bad.HealthReason != nil {
		reason = *bad.HealthReason
	}
	return domain.GPUFailedReason(bad.HostName, bad.Address, reason), nil
}

// release frees what the instance holds on its host (allocation and device
// claims) and, when it is deleted, its address too. Each is released
// exactly once: only rows not yet released are touched. Pending instances
// of the pool are woken, since room was freed.
func (r *Reconciler) release(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, all bool) error {
	if _, err := q.ReleaseAllocation(ctx, inst.ID); err != nil {
		return fmt.Errorf("release allocation: %w", err)
	}
	if _, err := q.ReleaseDeviceClaims(ctx, inst.ID); err != nil {
		return fmt.Errorf("release device claims: %w", err)
	}
	if all {
		if _, err := q.ReleaseLeases(ctx, inst.ID); err != nil {
			return fmt.Errorf("release IP lease: %w", err)
		}
	}
	pending, err := q.PendingInPool(ctx, inst.PoolID)
	if err != nil {
		return fmt.Errorf("list pending instances: %w", err)
	}
	return events.Wake(ctx, q, slices.DeleteFunc(pending, func(id uuid.UUID) bool { return id == inst.ID }))
}

// wakeHosts tells hosts their spec changed, each once however often it is
// named (a batch of placements names a host per instance), in one round
// trip. A lost message only delays them until their long-poll times out.
func (r *Reconciler) wakeHosts(ctx context.Context, hosts []uuid.UUID) {
	hosts = dedupe(hosts)
	if len(hosts) == 0 {
		return
	}
	cmds, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, h := range hosts {
			p.Publish(ctx, r.cfg.Prefix+events.HostChannel(h), "")
		}
		return nil
	})
	if err == nil {
		return
	}
	for i, c := range cmds {
		if c.Err() != nil {
			r.log.WarnContext(ctx, "wake host", "host", ids.Log(ids.Host, hosts[i]), "err", c.Err())
		}
	}
}

// dedupe returns ids without repeats, in their first order.
func dedupe(ids []uuid.UUID) []uuid.UUID {
	seen := make(map[uuid.UUID]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// spec is the power a NodeSpec entry holds, or nil for no entry.
func (p power) spec() *string {
	var s hostproto.Power
	switch p {
	case runPower:
		s = hostproto.PowerRunning
	case stopPower:
		s = hostproto.PowerStopped
	case pausePower:
		s = hostproto.PowerPaused
	default:
		return nil
	}
	return (*string)(&s)
}

func powerOf(s *string) power {
	if s == nil {
		return removePower
	}
	switch hostproto.Power(*s) {
	case hostproto.PowerRunning:
		return runPower
	case hostproto.PowerPaused:
		return pausePower
	}
	return stopPower
}

// instanceRequest asks the vps.instances kind to look at an instance.
func instanceRequest(id uuid.UUID) Request {
	return Request{Topic: vps.TopicInstances, Key: id.String()}
}
