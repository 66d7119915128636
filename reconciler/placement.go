package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// place puts a pending instance on a host of its pool: an allocation, its
// GPU claims and an address, all under the pool's lock, so two reconcilers
// never give out the same room or address, and records whether the host is
// certified, until when, and returns the row it wrote. With no room it
// stays PENDING with the reason (placed false), and is woken when room
// frees.
//
// The pool's lock is held to the commit, so what the lock's holder knows is
// not read again: the instance's own leases (addrs, read with its row lock)
// and the chosen host's liveness (it is alive: it is in hosts for the steps
// that follow).
func (r *Reconciler) place(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, hosts *hostCache, addrs *addresses, out *events.Outbox, wake *[]uuid.UUID) (_ sqlc.Instance, placed bool, _ error) {
	pool, err := q.LockPool(ctx, inst.PoolID)
	if err != nil {
		return inst, false, fmt.Errorf("lock pool: %w", err)
	}
	if pool.Class != vps.ClassHosted {
		return inst, false, r.wait(ctx, q, inst, fmt.Sprintf("pool %s is of class %s, which has no hosts", pool.Name, pool.Class))
	}
	only, why, err := restoreHost(ctx, q, inst, pool)
	if err != nil {
		return inst, false, err
	}
	if why != "" {
		return inst, false, r.wait(ctx, q, inst, why)
	}
	candidates, err := q.PlacementCandidates(ctx, sqlc.PlacementCandidatesParams{
		Tenant: inst.TenantID, Pool: pool.ID, SilentAfter: r.cfg.HostSilentAfter.Seconds(), OnlyHost: only,
		CertifiedMargin: r.cfg.CertifiedMargin.Seconds(),
	})
	if err != nil {
		return inst, false, fmt.Errorf("list hosts: %w", err)
	}
	hostIDs := make([]uuid.UUID, len(candidates))
	for i, h := range candidates {
		hostIDs[i] = h.ID
	}
	gpus := map[uuid.UUID][]string{}
	if inst.GpuCount > 0 && inst.GpuModel != nil {
		free, err := q.FreeGPUs(ctx, sqlc.FreeGPUsParams{Hosts: hostIDs, Model: *inst.GpuModel})
		if err != nil {
			return inst, false, fmt.Errorf("list free GPUs: %w", err)
		}
		for _, g := range free {
			gpus[g.HostID] = append(gpus[g.HostID], g.Address)
		}
	}
	host, ok := choose(candidates, inst, pool, gpus)
	if !ok {
		reason := noRoom(pool, inst, candidates, r.cfg.CertifiedMargin)
		if only != nil {
			reason = restoreNoRoom(ctx, q, inst, pool, *only, candidates, r.cfg.CertifiedMargin)
		}
		devices, err := gpusBusy(ctx, q, inst, hostIDs)
		if err != nil {
			return inst, false, err
		}
		return inst, false, r.wait(ctx, q, inst, reason+devices)
	}

	err = r.lease(ctx, q, inst, addrs)
	if errors.Is(err, errNoAddress) {
		return inst, false, r.wait(ctx, q, inst, fmt.Sprintf("no free address in pool %s", pool.Name))
	}
	if errors.Is(err, errNoIPRange) {
		return inst, false, r.wait(ctx, q, inst, fmt.Sprintf("pool %s has no IP range to give an address: an operator must add one (createIpPool)", pool.Name))
	}
	if err != nil {
		return inst, false, err
	}
	for _, addr := range gpus[host.ID][:inst.GpuCount] {
		if err := q.InsertDeviceClaim(ctx, sqlc.InsertDeviceClaimParams{ID: ids.New(), HostID: host.ID, Address: addr, InstanceID: inst.ID}); err != nil {
			return inst, false, fmt.Errorf("claim GPU %s on %s: %w", addr, host.Name, err)
		}
	}
	batch := []placing{{inst: inst, host: host, leases: addrs.leases}}
	if only == nil {
		more, err := r.pickMore(ctx, q, inst, pool, host, candidates)
		if err != nil {
			return inst, false, err
		}
		batch = append(batch, more...)
	}
	rows, err := placeAll(ctx, q, batch, out)
	if err != nil {
		return inst, false, err
	}
	for _, p := range batch {
		*wake = append(*wake, p.host.ID)
	}
	// A candidate reported within the silence timeout, by this
	// transaction's clock, as HostLiveness would say.
	if *hosts == nil {
		*hosts = hostCache{}
	}
	(*hosts)[host.ID] = sqlc.HostLivenessRow{ID: host.ID, Name: host.Name, PoolID: pool.ID, Alive: true}
	return rows[0], true, nil
}

// A placing is a pending instance with the host chosen for it and its
// leases: what placeAll writes.
type placing struct {
	inst   sqlc.Instance
	host   sqlc.PlacementCandidatesRow
	leases []sqlc.IpLease
}

// placeAll allocates each instance of batch on its host, bumping each
// host's spec generation once, and moves it to PROVISIONING there with its
// lease's MAC, recording whether the host is certified and until when; the
// events go into out. Two statements, however many instances: the pool's
// lock is held for a batch as briefly as for one. It returns the rows
// written, in batch's order.
func placeAll(ctx context.Context, q *sqlc.Queries, batch []placing, out *events.Outbox) ([]sqlc.Instance, error) {
	var a sqlc.AllocateOnHostsParams
	for _, p := range batch {
		a.AllocationIds = append(a.AllocationIds, ids.New())
		a.HostIds = append(a.HostIds, p.host.ID)
		a.TenantIds = append(a.TenantIds, p.inst.TenantID)
		a.InstanceIds = append(a.InstanceIds, p.inst.ID)
		a.Vcpus = append(a.Vcpus, p.inst.Vcpus)
		a.MemoryMb = append(a.MemoryMb, p.inst.MemoryMb)
		a.DiskGb = append(a.DiskGb, int64(p.inst.DiskGb))
	}
	bumped, err := q.AllocateOnHosts(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("allocate %d instances on their hosts: %w", len(batch), err)
	}
	gen := make(map[uuid.UUID]int64, len(bumped))
	for _, h := range bumped {
		gen[h.ID] = h.SpecGeneration
	}
	var t sqlc.PlaceInstancesParams
	for _, p := range batch {
		if from := lifecycle.State(p.inst.State); !lifecycle.CanTransition(from, lifecycle.Provisioning) {
			return nil, fmt.Errorf("transition %s → %s is not in the state table", from, lifecycle.Provisioning)
		}
		var validBefore time.Time
		if p.host.Certified {
			validBefore = *p.host.CertNotAfter
		}
		t.Ids = append(t.Ids, p.inst.ID)
		t.Versions = append(t.Versions, p.inst.Version)
		t.HostIds = append(t.HostIds, p.host.ID)
		t.SpecPowers = append(t.SpecPowers, *powerFor(lifecycle.Desired(p.inst.DesiredState)).spec())
		t.SpecGenerations = append(t.SpecGenerations, gen[p.host.ID])
		t.Macs = append(t.Macs, p.leases[0].Mac)
		t.Certified = append(t.Certified, p.host.Certified)
		t.CertValidBefore = append(t.CertValidBefore, validBefore)
	}
	written, err := q.PlaceInstances(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("move %d instances to PROVISIONING: %w", len(batch), err)
	}
	if len(written) != len(batch) {
		return nil, errRace
	}
	byID := make(map[uuid.UUID]sqlc.Instance, len(written))
	for _, row := range written {
		byID[row.ID] = row
	}
	rows := make([]sqlc.Instance, len(batch))
	for i, p := range batch {
		rows[i] = byID[p.inst.ID]
		if err := out.EnqueueLeased(ctx, q, TopicEvents, events.Updated, rows[i], p.leases); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// placeBatch bounds the instances one hold of a pool's lock places.
const placeBatch = 32

// pickMore picks, under the pool's lock that placed inst, more of the
// pool's pending instances of inst's tenant that need only a host and an
// address (LockPendingPlain), until placeBatch or room runs out, and leases
// them addresses in one statement; those the first range with room above
// its leases has none for are left to their own reconciles. host is where
// inst went.
// Placements of a pool wait for each other's commit, so one hold and one
// commit for many is what lets a fleet be placed as fast as it is created.
// Their own reconciles, which waited for their rows, find them placed.
// candidates is what placing inst left of the hosts: it is kept up to
// date here, as the statement that read it would read it now.
func (r *Reconciler) pickMore(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, pool sqlc.Pool, host sqlc.PlacementCandidatesRow, candidates []sqlc.PlacementCandidatesRow) ([]placing, error) {
	placed := func(inst sqlc.Instance, host sqlc.PlacementCandidatesRow) {
		for i := range candidates {
			if candidates[i].ID == host.ID {
				candidates[i].UsedVcpus += int64(inst.Vcpus)
				candidates[i].UsedMemoryMb += inst.MemoryMb
				candidates[i].UsedDiskGb += int64(inst.DiskGb)
				candidates[i].Allocations++
			}
		}
	}
	placed(inst, host) // the placement just made, not in what was read
	more, err := q.LockPendingPlain(ctx, sqlc.LockPendingPlainParams{PoolID: pool.ID, TenantID: inst.TenantID, PlacedID: inst.ID, Lim: placeBatch - 1})
	if err != nil {
		return nil, fmt.Errorf("lock pending instances: %w", err)
	}
	var picked []placing
	for _, next := range more {
		f, err := r.facts(ctx, q, next, &hostCache{})
		if err != nil {
			return nil, err
		}
		if st, ok := decide(f); !ok || !st.place {
			continue
		}
		h, ok := choose(candidates, next, pool, nil)
		if !ok {
			break
		}
		placed(next, h)
		picked = append(picked, placing{inst: next, host: h})
	}
	if len(picked) == 0 {
		return nil, nil
	}
	l := sqlc.LeaseNextAddressesParams{PoolID: pool.ID}
	for _, p := range picked {
		l.Ids = append(l.Ids, ids.New())
		l.InstanceIds = append(l.InstanceIds, p.inst.ID)
	}
	leases, err := q.LeaseNextAddresses(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("lease %d addresses: %w", len(picked), err)
	}
	leased := make(map[uuid.UUID]sqlc.IpLease, len(leases))
	for _, l := range leases {
		leased[l.InstanceID] = l
	}
	kept := picked[:0]
	for _, p := range picked {
		if l, ok := leased[p.inst.ID]; ok {
			p.leases = []sqlc.IpLease{l}
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// choose picks the host for inst among those with room and a protocol
// version that can honour it (domain.HostProtocol): the emptiest (spread)
// or the fullest (pack), never the host it could not start on, under
// singleTenant only a host serving no other tenant, preferring one that
// already serves this tenant, and under requireCertifiedHosts only a host
// whose certificate outlives the certified margin.
func choose(hosts []sqlc.PlacementCandidatesRow, inst sqlc.Instance, pool sqlc.Pool, gpus map[uuid.UUID][]string) (sqlc.PlacementCandidatesRow, bool) {
	var (
		best      sqlc.PlacementCandidatesRow
		bestScore float64
		found     bool
		protocol  = domain.HostProtocol(inst)
	)
	for _, h := range hosts {
		freeCPU := int64(h.Vcpus) - h.UsedVcpus - int64(inst.Vcpus)
		freeMem := h.MemoryMb - h.UsedMemoryMb - inst.MemoryMb
		freeDisk := h.DiskGb - h.UsedDiskGb - int64(inst.DiskGb)
		switch {
		case freeCPU < 0 || freeMem < 0 || freeDisk < 0:
			continue
		case inst.AvoidHostID != nil && *inst.AvoidHostID == h.ID:
			continue
		case domain.SpokenProtocol(h.Protocol) < protocol:
			continue
		case pool.SingleTenant && !h.OnlyTenant:
			continue
		case pool.RequireCertifiedHosts && !h.OutlivesMargin:
			continue
		case len(gpus[h.ID]) < int(inst.GpuCount):
			continue
		}
		// The share of the host left free after placing: CPU and memory alike.
		score := float64(freeCPU)/float64(max(h.Vcpus, 1)) + float64(freeMem)/float64(max(h.MemoryMb, 1))
		if pool.Placement == "pack" {
			score = -score
		}
		if pool.SingleTenant && h.Allocations > 0 {
			score += 10 // keep a tenant together, leaving empty hosts to others
		}
		if !found || score > bestScore {
			best, bestScore, found = h, score, true
		}
	}
	return best, found
}

// noRoom says why no host of a pool can take inst. In a pool that requires
// certified hosts it says so first, naming the hosts skipped for their
// certificate.
func noRoom(pool sqlc.Pool, inst sqlc.Instance, hosts []sqlc.PlacementCandidatesRow, margin time.Duration) string {
	need := fmt.Sprintf("%d vCPUs, %d MiB, %d GiB", inst.Vcpus, inst.MemoryMb, inst.DiskGb)
	if inst.GpuCount > 0 && inst.GpuModel != nil {
		need += fmt.Sprintf(", %d × %s", inst.GpuCount, *inst.GpuModel)
	}
	reason := fmt.Sprintf("no live host in pool %s has room for %s", pool.Name, need)
	if pool.RequireCertifiedHosts {
		reason = fmt.Sprintf("no certified host in pool %s has room for %s", pool.Name, need)
		var skipped []string
		for _, h := range hosts {
			if !h.OutlivesMargin {
				skipped = append(skipped, h.Name)
			}
		}
		reason += fmt.Sprintf(" (the pool requires a host certificate valid for %v more", margin)
		if len(skipped) > 0 {
			reason += fmt.Sprintf("; not certified or expiring sooner: %s", strings.Join(skipped, ", "))
		}
		reason += ")"
	}
	if inst.AvoidHostID != nil {
		avoided := "its last host"
		for _, h := range hosts {
			if h.ID == *inst.AvoidHostID {
				avoided = "host " + h.Name
			}
		}
		reason += fmt.Sprintf(" (%s could not start it)", avoided)
	}
	protocol := domain.HostProtocol(inst)
	var older []string
	for _, h := range hosts {
		if domain.SpokenProtocol(h.Protocol) < protocol {
			older = append(older, h.Name)
		}
	}
	if len(older) > 0 {
		reason += fmt.Sprintf(" and speaks host protocol %d or later (older: %s)", protocol, strings.Join(older, ", "))
	}
	return reason
}

// gpusBusy says, for an instance that needs GPUs, what holds the devices
// of its model on the candidate hosts: " (GPUs fake-gpu: 2, 1 unhealthy,
// 1 taken)"; "" for one that needs none.
func gpusBusy(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, hostIDs []uuid.UUID) (string, error) {
	if inst.GpuCount == 0 || inst.GpuModel == nil {
		return "", nil
	}
	n, err := q.GPUsOfModel(ctx, sqlc.GPUsOfModelParams{Hosts: hostIDs, Model: *inst.GpuModel})
	if err != nil {
		return "", fmt.Errorf("count GPUs: %w", err)
	}
	return fmt.Sprintf(" (GPUs %s on live hosts: %d, %d unhealthy, %d taken)", *inst.GpuModel, n.Total, n.Unhealthy, n.Taken), nil
}

var errNoAddress = errors.New("no free address")

// errNoIPRange: the pool has no IP range, so an instance placed there
// would have no address; it waits until an operator adds one.
var errNoIPRange = errors.New("no IP range")

// lease gives the instance an address unless it kept one from an earlier
// placement (addrs, its live leases): a new lease from the pool's ranges,
// recorded in addrs. A pool with no ranges has no address to give:
// errNoIPRange.
func (r *Reconciler) lease(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, addrs *addresses) error {
	if len(addrs.leases) > 0 {
		return nil
	}
	l, err := leaseAddress(ctx, q, inst)
	if errors.Is(err, errNoAddress) {
		// Full, or no range at all: asked only now, as it is rare.
		ranged, err := q.HasIPPools(ctx, inst.PoolID)
		if err != nil {
			return fmt.Errorf("read IP ranges: %w", err)
		}
		if !ranged {
			return errNoIPRange
		}
		return errNoAddress
	}
	if err != nil {
		return err
	}
	addrs.set([]sqlc.IpLease{l})
	return nil
}

// leaseAddress leases inst an address of its pool's ranges: the one after
// the highest leased (LeaseNextAddresses), and once the ranges are leased
// up to their ends, the lowest free (LeaseFreeAddress), which scans.
// errNoAddress: none is free.
func leaseAddress(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance) (sqlc.IpLease, error) {
	next, err := q.LeaseNextAddresses(ctx, sqlc.LeaseNextAddressesParams{PoolID: inst.PoolID, Ids: []uuid.UUID{ids.New()}, InstanceIds: []uuid.UUID{inst.ID}})
	if err != nil {
		return sqlc.IpLease{}, fmt.Errorf("lease the next address: %w", err)
	}
	if len(next) == 1 {
		return next[0], nil
	}
	l, err := q.LeaseFreeAddress(ctx, sqlc.LeaseFreeAddressParams{ID: ids.New(), InstanceID: inst.ID, PoolID: inst.PoolID})
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlc.IpLease{}, errNoAddress
	}
	if err != nil {
		return sqlc.IpLease{}, fmt.Errorf("lease a free address: %w", err)
	}
	return l, nil
}

// wait leaves a pending instance PENDING, recording why when it changed.
func (r *Reconciler) wait(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, reason string) error {
	if inst.StateReason == reason {
		return nil
	}
	out, err := q.SetStateReason(ctx, sqlc.SetStateReasonParams{ID: inst.ID, Version: inst.Version, StateReason: reason})
	if errors.Is(err, pgx.ErrNoRows) {
		return errRace
	}
	if err != nil {
		return fmt.Errorf("record why it waits: %w", err)
	}
	return events.Enqueue(ctx, q, TopicEvents, events.Updated, out)
}
