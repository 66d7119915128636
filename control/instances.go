package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// CreateInstanceInput asks for an instance.
type CreateInstanceInput struct {
	// TenantID owns the instance. Members may leave it zero (their own
	// tenant); operators must name it.
	TenantID uuid.UUID
	PoolID   uuid.UUID
	FlavorID uuid.UUID
	ImageID  uuid.UUID
	Name     string
	// SSHKeys are authorized_keys lines; at least one.
	SSHKeys []string
	// UserData is sealed at rest and never readable back; nil for none.
	UserData []byte
	// DesiredState is RUNNING (the default) or STOPPED.
	DesiredState lifecycle.Desired
	// IdempotencyKey, when set, makes a repeated create by the same tenant
	// return the first result.
	IdempotencyKey string
}

// CreateInstance admits an instance and records it as desired state.
func (s *Service) CreateInstance(ctx context.Context, in CreateInstanceInput) (domain.Instance, error) {
	var out domain.Instance
	err := s.mutate(ctx, ActCreateInstance, func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		var err error
		out, err = s.admit(ctx, tx, q, ev, in)
		return err
	})
	if err != nil {
		return domain.Instance{}, err
	}
	return out, nil
}

func (s *Service) admit(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event, in CreateInstanceInput) (domain.Instance, error) {
	var none domain.Instance
	p, err := caller(ctx)
	if err != nil {
		return none, err
	}
	tenant := in.TenantID
	switch {
	case p.IsOperator() && tenant == uuid.Nil:
		return none, apierr.Invalid("tenantId", "operators must name the tenant")
	case !p.IsOperator() && tenant == uuid.Nil:
		tenant = p.TenantID
	case !p.CanSee(tenant):
		return none, apierr.NotFoundf("tenantId", "tenant not found")
	}
	if in.DesiredState == "" {
		in.DesiredState = lifecycle.WantRunning
	}
	if in.DesiredState != lifecycle.WantRunning && in.DesiredState != lifecycle.WantStopped {
		return none, apierr.Invalid("desiredState", "must be RUNNING or STOPPED")
	}
	if err := checkName("name", in.Name); err != nil {
		return none, err
	}
	keys, err := parseSSHKeys(in.SSHKeys)
	if err != nil {
		return none, err
	}
	if len(in.UserData) > MaxUserData {
		return none, apierr.Invalid("userData", "is %d bytes, the limit is %d", len(in.UserData), MaxUserData)
	}
	if len(in.IdempotencyKey) > 255 {
		return none, apierr.Invalid("idempotencyKey", "at most 255 characters")
	}

	if prev, ok, err := replay(ctx, q, ev, tenant, in.IdempotencyKey); ok || err != nil {
		return prev, err
	}
	pool, err := q.GetPool(ctx, in.PoolID)
	if err != nil {
		return none, notFound(err, "poolId", "pool")
	}
	if pool.TenantID != nil && *pool.TenantID != tenant {
		return none, apierr.NotFoundf("poolId", "pool not found")
	}
	if pool.Class != vps.ClassHosted && pool.Class != vps.ClassProvider {
		return none, apierr.Invalid("poolId", "pool %s is of class %q; instances need class %s or %s", pool.Name, pool.Class, vps.ClassHosted, vps.ClassProvider)
	}
	flavor, err := q.GetFlavor(ctx, in.FlavorID)
	if err != nil {
		return none, notFound(err, "flavorId", "flavor")
	}
	img, err := s.images.Resolve(ctx, tx, tenant, in.ImageID)
	if err != nil {
		return none, err
	}
	if img == nil {
		return none, apierr.NotFoundf("imageId", "image not found")
	}
	if pool.RequireVerifiedImage && !img.Verified {
		return none, apierr.Invalid("imageId", "pool %s requires a verified image", pool.Name)
	}
	if err := s.servable(ctx, q, pool, flavor, img); err != nil {
		return none, err
	}
	id := ids.New()
	var sealed []byte
	if in.UserData != nil {
		if s.sealer == nil {
			return none, errors.New("no sealer configured for user data")
		}
		sealed = s.sealer.Seal(in.UserData, id[:])
	}
	var idem *string
	if in.IdempotencyKey != "" {
		idem = &in.IdempotencyKey
	}
	inst, err := q.InsertInstance(ctx, sqlc.InsertInstanceParams{
		ID:             id,
		TenantID:       tenant,
		PoolID:         pool.ID,
		FlavorID:       flavor.ID,
		ImageID:        in.ImageID,
		ImageUrl:       img.URL,
		ImageSha256:    img.SHA256,
		ImageFormat:    img.Format,
		ImageVerified:  img.Verified,
		Name:           in.Name,
		SshKeys:        keys,
		Vcpus:          flavor.Vcpus,
		MemoryMb:       flavor.MemoryMb,
		DiskGb:         flavor.DiskGb,
		GpuModel:       flavor.GpuModel,
		GpuCount:       flavor.GpuCount,
		DesiredState:   string(in.DesiredState),
		IdempotencyKey: idem,
		UserDataSealed: sealed,
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// A create with the same idempotency key came first: the insert
		// waited for it to commit.
		if prev, ok, err := replay(ctx, q, ev, tenant, in.IdempotencyKey); ok || err != nil {
			return prev, err
		}
		return none, fmt.Errorf("insert instance: idempotency key %q conflicts but finds no instance", in.IdempotencyKey)
	case violates(err, "instances_name_live"):
		ev.TenantID = tenant
		return none, &apierr.Error{Code: apierr.Conflict, Field: "name", Message: fmt.Sprintf("an instance named %s exists", in.Name)}
	case violates(err, "instances_tenant_id_fkey"):
		return none, apierr.NotFoundf("tenantId", "tenant not found")
	case err != nil:
		return none, fmt.Errorf("insert instance: %w", err)
	}
	ev.TargetID = inst.ID
	ev.Details = map[string]any{"name": inst.Name, "desiredState": inst.DesiredState}
	// A new instance leases nothing yet: no read of its leases.
	if err := events.EnqueueLeased(ctx, q, vps.TopicInstances, events.Created, inst, nil); err != nil {
		return none, err
	}
	out := domain.InstanceFromRow(inst, nil)
	// The tenant's lock, held until commit, serializes the quota check per
	// tenant: the usage it reads holds every instance committed before it,
	// and this one is added to it at commit (tenant_usage's trigger). It is
	// taken last, after the audit row, so it is held only for the check and
	// the commit (a refusal rolls the row back and records the failure);
	// names and idempotency keys need no lock (unique indexes, above).
	ev.TenantID = tenant
	if err := audit.Write(ctx, q, *ev); err != nil {
		return none, err
	}
	ev.Written = true
	if err := lockQuota(ctx, q, tenant, flavor); err != nil {
		return none, err
	}
	return out, nil
}

// lockQuota takes a tenant's lock for an admission and checks under it that
// one more instance of flavor f fits the tenant's quota: one round trip.
func lockQuota(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID, f sqlc.Flavor) error {
	row, err := q.LockTenantQuota(ctx, tenant)
	if err != nil {
		return notFound(err, "tenantId", "tenant")
	}
	return fitsQuota(row, f)
}

// fitsQuota refuses one more instance of flavor f where row, a tenant's
// limits and usage, has no room for it.
func fitsQuota(row sqlc.TenantQuotaUsage, f sqlc.Flavor) error {
	quota := sqlc.Quota{MaxInstances: row.MaxInstances, MaxVcpus: row.MaxVcpus, MaxMemoryMb: row.MaxMemoryMb, MaxGpus: row.MaxGpus}
	usage := sqlc.TenantUsageRow{Instances: row.Instances, Vcpus: row.Vcpus, MemoryMb: row.MemoryMb, Gpus: row.Gpus}
	return checkQuota(quota, usage, f, 1)
}

// servable refuses, for a provider pool, a flavor or an image its provider
// has no counterpart of: a Hetzner server type, a Hetzner image or a
// Proxmox template.
func (s *Service) servable(ctx context.Context, q *sqlc.Queries, pool sqlc.Pool, f sqlc.Flavor, img *ResolvedImage) error {
	if pool.Class != vps.ClassProvider || pool.ProviderAccountID == nil {
		return nil
	}
	acct, err := q.GetProviderAccount(ctx, *pool.ProviderAccountID)
	if err != nil {
		return notFound(err, "poolId", "the pool's provider account")
	}
	// Proxmox sizes a clone from the flavor's CPUs and memory: any flavor fits.
	if acct.Provider != ProviderProxmox && providerName(f.ProviderTypes, acct.Provider) == "" {
		return apierr.Invalid("flavorId", "pool %s is at %s, where flavor %s has no server type", pool.Name, acct.Provider, f.Name)
	}
	if img.ProviderImages[acct.Provider] == "" {
		return apierr.Invalid("imageId", "pool %s is at %s, where this image has no counterpart", pool.Name, acct.Provider)
	}
	return nil
}

// replay returns the instance a tenant created before with key, if any.
func replay(ctx context.Context, q *sqlc.Queries, ev *audit.Event, tenant uuid.UUID, key string) (domain.Instance, bool, error) {
	if key == "" {
		return domain.Instance{}, false, nil
	}
	prev, err := q.GetInstanceByIdempotencyKey(ctx, sqlc.GetInstanceByIdempotencyKeyParams{TenantID: tenant, IdempotencyKey: &key})
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Instance{}, false, nil
	}
	if err != nil {
		return domain.Instance{}, false, fmt.Errorf("look up idempotency key: %w", err)
	}
	ev.TenantID, ev.TargetID = tenant, prev.ID
	ev.Details = map[string]any{"idempotentReplay": true}
	out, err := withAddresses(ctx, q, prev)
	return out, true, err
}

// checkQuota refuses one more instance of flavor f in tenant when it and
// the tenant's committed instances would exceed its quota. The caller holds
// the tenant's lock; an instance it inserted is not yet in the usage read
// (tenant_usage is kept at commit).
func (s *Service) checkQuota(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID, f sqlc.Flavor) error {
	row, err := q.QuotaUsage(ctx, tenant)
	if err != nil {
		return notFound(err, "tenantId", "tenant")
	}
	return fitsQuota(row, f)
}

// SetDesiredState asks for an instance to be running, stopped or deleted.
// Asking for what is already desired changes nothing.
func (s *Service) SetDesiredState(ctx context.Context, id uuid.UUID, want lifecycle.Desired) (domain.Instance, error) {
	var out domain.Instance
	action, ok := DesiredStateActions[want]
	if !ok {
		return domain.Instance{}, apierr.Invalid("desiredState", "must be RUNNING, STOPPED or DELETED")
	}
	err := s.mutate(ctx, action, func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		cur, err := s.visibleInstance(ctx, q.LockInstance, id)
		if err != nil {
			return err
		}
		ev.TenantID = cur.TenantID
		deleted := cur.DesiredState == string(lifecycle.WantDeleted) || cur.State == string(lifecycle.Deleted)
		switch {
		case deleted && want == lifecycle.WantDeleted, cur.DesiredState == string(want):
			ev.Details = map[string]any{"unchanged": true}
			out, err = withAddresses(ctx, q, cur)
			return err
		case deleted:
			return apierr.New(apierr.FailedPrecondition, "instance %s is deleted", cur.Name)
		}
		if err := ownedElsewhere(cur); err != nil {
			return err
		}
		inst, err := q.SetDesiredState(ctx, sqlc.SetDesiredStateParams{ID: id, DesiredState: string(want), Version: cur.Version})
		if err != nil {
			return fmt.Errorf("set desired state: %w", err)
		}
		ev.Details = map[string]any{"from": cur.DesiredState, "to": inst.DesiredState, "version": inst.Version}
		out, err = changed(ctx, q, inst)
		return err
	})
	if err != nil {
		return domain.Instance{}, err
	}
	return out, nil
}

// ownedElsewhere refuses to change an instance directly that a sandbox or
// a warm pool owns.
func ownedElsewhere(inst sqlc.Instance) error {
	switch {
	case inst.SandboxID != nil:
		return apierr.New(apierr.FailedPrecondition, "instance %s runs sandbox %s; change it through the sandbox", inst.Name, ids.Encode(ids.Sandbox, *inst.SandboxID))
	case inst.WarmTemplateID != nil:
		return apierr.New(apierr.FailedPrecondition, "instance %s waits in the warm pool of sandbox template %s", inst.Name, ids.Encode(ids.SandboxTemplate, *inst.WarmTemplateID))
	}
	return nil
}

// RebootInstance asks for a running instance to reboot: it is REBOOTING
// until its host has shut its guest down and started it again (a hosted
// pool), or its provider took the reboot (a provider pool), then RUNNING.
// Asking again while it reboots changes nothing.
func (s *Service) RebootInstance(ctx context.Context, id uuid.UUID) (domain.Instance, error) {
	var out domain.Instance
	err := s.mutate(ctx, ActRebootInstance, func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		cur, err := s.visibleInstance(ctx, q.LockInstance, id)
		if err != nil {
			return err
		}
		ev.TenantID = cur.TenantID
		if err := ownedElsewhere(cur); err != nil {
			return err
		}
		if cur.State == string(lifecycle.Rebooting) && cur.DesiredState == string(lifecycle.WantRunning) {
			ev.Details = map[string]any{"unchanged": true}
			out, err = withAddresses(ctx, q, cur)
			return err
		}
		if cur.State != string(lifecycle.Running) || cur.DesiredState != string(lifecycle.WantRunning) {
			return apierr.New(apierr.FailedPrecondition, "instance %s is %s (asked to be %s); only a RUNNING instance reboots", cur.Name, cur.State, cur.DesiredState)
		}
		inst, err := q.Reboot(ctx, sqlc.RebootParams{ID: id, Version: cur.Version})
		if err != nil {
			return fmt.Errorf("reboot: %w", err)
		}
		ev.Details = map[string]any{"version": inst.Version}
		out, err = changed(ctx, q, inst)
		return err
	})
	if err != nil {
		return domain.Instance{}, err
	}
	return out, nil
}

// changed hands an instance a mutation changed to the reconciler and the
// live events, in q's transaction, and returns it as written.
func changed(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance) (domain.Instance, error) {
	if err := events.Enqueue(ctx, q, vps.TopicInstances, events.Updated, inst); err != nil {
		return domain.Instance{}, err
	}
	return withAddresses(ctx, q, inst)
}

// visibleInstance reads an instance with get and answers NOT_FOUND when the
// caller may not see it.
func (s *Service) visibleInstance(ctx context.Context, get func(context.Context, uuid.UUID) (sqlc.Instance, error), id uuid.UUID) (sqlc.Instance, error) {
	p, err := caller(ctx)
	if err != nil {
		return sqlc.Instance{}, err
	}
	inst, err := get(ctx, id)
	if err != nil {
		return inst, notFound(err, "id", "instance")
	}
	if !p.CanSee(inst.TenantID) {
		return sqlc.Instance{}, apierr.NotFoundf("id", "instance not found")
	}
	return inst, nil
}

// Instance returns an instance the caller may see.
func (s *Service) Instance(ctx context.Context, id uuid.UUID) (domain.Instance, error) {
	inst, err := s.visibleInstance(ctx, s.q.GetInstance, id)
	if err != nil {
		return domain.Instance{}, err
	}
	return withAddresses(ctx, s.q, inst)
}

// withAddresses maps an instance row with the addresses it leases, read
// through q: a mutation's answer is read in its transaction, so that what
// was done is never answered with an error.
func withAddresses(ctx context.Context, q *sqlc.Queries, row sqlc.Instance) (domain.Instance, error) {
	insts, err := mapInstances(ctx, q, []sqlc.Instance{row})
	if err != nil {
		return domain.Instance{}, err
	}
	return insts[0], nil
}

// mapInstances maps instance rows with the addresses they lease, read in
// one query.
func mapInstances(ctx context.Context, q *sqlc.Queries, rows []sqlc.Instance) ([]domain.Instance, error) {
	keys := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		keys[i] = r.ID
	}
	leases, err := groupByID(ctx, "IP leases", keys, q.ListLiveLeases, func(l sqlc.IpLease) uuid.UUID { return l.InstanceID })
	if err != nil {
		return nil, err
	}
	out := make([]domain.Instance, len(rows))
	for i, r := range rows {
		out[i] = domain.InstanceFromRow(r, leases[r.ID])
	}
	return out, nil
}

// InstanceFilter narrows a list of instances; zero fields do not filter.
type InstanceFilter struct {
	PoolID       *uuid.UUID
	State        *string
	DesiredState *string
	Name         *string
	// ExcludeDeleted leaves DELETED instances out.
	ExcludeDeleted bool
}

// list runs a list query limited to what the caller may see and maps its
// rows with fromRow.
func list[R, T any](ctx context.Context, what string, query func(context.Context, *uuid.UUID) ([]R, error), fromRow func(R) T) ([]T, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := query(ctx, p.TenantFilter())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	return mapRows(rows, fromRow), nil
}

// Instances lists the instances the caller may see, newest first. It reads
// one more than asked so the caller knows whether there is a next page.
func (s *Service) Instances(ctx context.Context, f InstanceFilter, page Page[uuid.UUID]) ([]domain.Instance, PageInfo, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, PageInfo{}, err
	}
	params := sqlc.ListInstancesParams{
		Tenant: p.TenantFilter(), Pool: f.PoolID, State: f.State, DesiredState: f.DesiredState,
		Name: f.Name, ExcludeDeleted: f.ExcludeDeleted,
	}
	rows, info, err := keyset(ctx, page, func(ctx context.Context, asc bool, lo, hi *uuid.UUID, lim int32) (rows []sqlc.Instance, err error) {
		params.Lo, params.Hi, params.Lim = lo, hi, lim
		if asc {
			rows, err = s.q.ListInstancesAsc(ctx, sqlc.ListInstancesAscParams(params))
		} else {
			rows, err = s.q.ListInstances(ctx, params)
		}
		if err != nil {
			return nil, fmt.Errorf("list instances: %w", err)
		}
		return rows, nil
	})
	if err != nil {
		return nil, PageInfo{}, err
	}
	items, err := mapInstances(ctx, s.q, rows)
	return items, info, err
}

// CountInstances counts the instances a list with f would page through.
func (s *Service) CountInstances(ctx context.Context, f InstanceFilter) (int, error) {
	p, err := caller(ctx)
	if err != nil {
		return 0, err
	}
	n, err := s.q.CountInstances(ctx, sqlc.CountInstancesParams{
		Tenant: p.TenantFilter(), Pool: f.PoolID, State: f.State, DesiredState: f.DesiredState, Name: f.Name,
		ExcludeDeleted: f.ExcludeDeleted,
	})
	if err != nil {
		return 0, fmt.Errorf("count instances: %w", err)
	}
	return int(n), nil
}

// WatchFilter narrows what a subscription shows; zero fields do not filter.
type WatchFilter struct {
	IDs    []uuid.UUID
	PoolID *uuid.UUID
	State  *string
}

// WatchedInstances reads the instances a subscription with f shows the
// caller: those changed since since (deleted ones included), or, with a
// zero since, the current ones.
func (s *Service) WatchedInstances(ctx context.Context, f WatchFilter, since time.Time) ([]domain.Instance, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	params := sqlc.WatchInstancesParams{Tenant: p.TenantFilter(), Ids: f.IDs, Pool: f.PoolID, State: f.State, IncludeDeleted: !since.IsZero()}
	if params.Ids == nil {
		params.Ids = []uuid.UUID{}
	}
	if !since.IsZero() {
		params.Since = &since
	}
	rows, err := s.q.WatchInstances(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("read watched instances: %w", err)
	}
	return mapInstances(ctx, s.q, rows)
}
