package control

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// PoolInput creates a pool.
type PoolInput struct {
	Name  string
	Class string
	// TenantID dedicates the pool to one tenant; zero shares it with all.
	TenantID uuid.UUID
	// Placement is spread (default) or pack.
	Placement            string
	SingleTenant         bool
	RequireVerifiedImage bool
	// ProviderAccountID is the account a pool of class provider creates its
	// instances with; required for that class, refused for any other.
	ProviderAccountID uuid.UUID
	// SharedSnapshotStore says every host of the pool mounts the same
	// snapshot store at its --snapshot-dir; only for class vps-host.
	SharedSnapshotStore bool
	// Runtime is the runtime a pool of class vps-host runs, one the
	// deployment lists; default its first. Refused for other classes.
	Runtime string
	// RequireCertifiedHosts places the pool's instances only on hosts
	// whose certificate outlives the reconciler's certified margin; only
	// for class vps-host.
	RequireCertifiedHosts bool
}

var (
	slug      = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	poolClass = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
)

// CreatePool creates a pool. Operators only.
func (s *Service) CreatePool(ctx context.Context, in PoolInput) (domain.Pool, error) {
	var pool sqlc.Pool
	err := s.mutate(ctx, ActCreatePool, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		if !slug.MatchString(in.Name) {
			return apierr.Invalid("name", "must be a lowercase slug of at most 63 characters")
		}
		if !poolClass.MatchString(in.Class) {
			return apierr.Invalid("class", "must be a lowercase slug such as %s or %s", vps.ClassHosted, vps.ClassProvider)
		}
		if in.SharedSnapshotStore && in.Class != vps.ClassHosted {
			return sharedStoreSetting.refuse(in.Class)
		}
		if in.RequireCertifiedHosts && in.Class != vps.ClassHosted {
			return certifiedSetting.refuse(in.Class)
		}
		if in.Placement == "" {
			in.Placement = "spread"
		}
		if in.Placement != "spread" && in.Placement != "pack" {
			return apierr.Invalid("placement", "must be spread or pack")
		}
		runtime, err := s.poolRuntime(in.Class, in.Runtime)
		if err != nil {
			return err
		}
		var tenant *uuid.UUID
		if in.TenantID != uuid.Nil {
			if _, err := q.LockTenant(ctx, in.TenantID); err != nil {
				return notFound(err, "tenantId", "tenant")
			}
			tenant, ev.TenantID = &in.TenantID, in.TenantID
		}
		var account *uuid.UUID
		switch {
		case in.Class == vps.ClassProvider && in.ProviderAccountID == uuid.Nil:
			return apierr.Invalid("providerAccountId", "a pool of class %s needs a provider account", vps.ClassProvider)
		case in.Class != vps.ClassProvider && in.ProviderAccountID != uuid.Nil:
			return apierr.Invalid("providerAccountId", "only pools of class %s have a provider account", vps.ClassProvider)
		case in.ProviderAccountID != uuid.Nil:
			acct, err := q.GetProviderAccount(ctx, in.ProviderAccountID)
			if err != nil {
				return notFound(err, "providerAccountId", "provider account")
			}
			if acct.TenantID != nil && (tenant == nil || *tenant != *acct.TenantID) {
				return apierr.Invalid("providerAccountId", "a tenant's provider account serves only a pool dedicated to that tenant")
			}
			account = &acct.ID
		}
		pool, err = q.CreatePool(ctx, sqlc.CreatePoolParams{
			ID: ids.New(), Name: in.Name, Class: in.Class, TenantID: tenant, Placement: in.Placement,
			SingleTenant: in.SingleTenant, RequireVerifiedImage: in.RequireVerifiedImage, ProviderAccountID: account,
			SharedSnapshotStore: in.SharedSnapshotStore, Runtime: runtime, RequireCertifiedHosts: in.RequireCertifiedHosts,
		})
		if err != nil {
			return fmt.Errorf("create pool: %w", err)
		}
		ev.TargetID = pool.ID
		ev.Details = map[string]any{"name": in.Name, "class": in.Class, "sharedSnapshotStore": in.SharedSnapshotStore, "runtime": runtime,
			"requireCertifiedHosts": in.RequireCertifiedHosts}
		return nil
	})
	return domain.PoolFromRow(pool), err
}

// poolRuntime is the runtime of a new pool of class: for a hosted pool the
// one asked for, which the deployment must list, or its first; for another
// class none, and asking for one is refused.
func (s *Service) poolRuntime(class, asked string) (*string, error) {
	switch {
	case class != vps.ClassHosted && asked != "":
		return nil, apierr.Invalid("runtime", "only a pool of class %s has hosts that run a runtime; this one is of class %s", vps.ClassHosted, class)
	case class != vps.ClassHosted:
		return nil, nil
	case asked == "":
		return &s.runtimes[0], nil
	case !slices.Contains(s.runtimes, asked):
		return nil, apierr.Invalid("runtime", "%q is not a runtime this deployment runs (BC_RUNTIMES: %s)", asked, strings.Join(s.runtimes, ", "))
	}
	return &asked, nil
}

// A hostedOnly setting is one only a pool with hosts (vps.ClassHosted) may
// turn on: field names it in inputs and audit details, needs says what
// hosts give it.
type hostedOnly struct {
	field, needs string
}

var (
	sharedStoreSetting = hostedOnly{"sharedSnapshotStore", "to share a snapshot store"}
	certifiedSetting   = hostedOnly{"requireCertifiedHosts", "to hold certificates"}
)

// refuse refuses the setting to a pool of class.
func (h hostedOnly) refuse(class string) error {
	return apierr.Invalid(h.field, "only a pool of class %s has hosts %s; this one is of class %s", vps.ClassHosted, h.needs, class)
}

// SetPoolSharedSnapshotStore says whether every host of a hosted pool
// mounts the same snapshot store (restores then run on any of its hosts),
// or not (a restore runs on the host that took its snapshot). Operators
// only; set it once the hosts share the store, clear it before they stop.
func (s *Service) SetPoolSharedSnapshotStore(ctx context.Context, id uuid.UUID, shared bool) (domain.Pool, error) {
	return s.setHostedOnly(ctx, ActSetPoolSharedStore, sharedStoreSetting, id, shared,
		func(ctx context.Context, q *sqlc.Queries) (sqlc.Pool, error) {
			return q.SetPoolSharedSnapshotStore(ctx, sqlc.SetPoolSharedSnapshotStoreParams{ID: id, Shared: shared})
		})
}

// SetPoolRequireCertifiedHosts says whether a hosted pool places only on
// hosts whose certificate outlives the certified margin. What already runs
// stays where it is; the pool's pending instances are looked at again.
// Operators only.
func (s *Service) SetPoolRequireCertifiedHosts(ctx context.Context, id uuid.UUID, required bool) (domain.Pool, error) {
	return s.setHostedOnly(ctx, ActSetPoolCertified, certifiedSetting, id, required,
		func(ctx context.Context, q *sqlc.Queries) (sqlc.Pool, error) {
			return q.SetPoolRequireCertifiedHosts(ctx, sqlc.SetPoolRequireCertifiedHostsParams{ID: id, Required: required})
		})
}

// setHostedOnly sets a hostedOnly setting of pool id to on with set, in one
// transaction with its audit row, and wakes the pool's pending instances,
// which may place otherwise now. Operators only.
func (s *Service) setHostedOnly(ctx context.Context, act Action, h hostedOnly, id uuid.UUID, on bool,
	set func(context.Context, *sqlc.Queries) (sqlc.Pool, error)) (domain.Pool, error) {
	var pool sqlc.Pool
	err := s.mutate(ctx, act, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		if _, err := operator(ctx); err != nil {
			return err
		}
		cur, err := q.LockPool(ctx, id)
		if err != nil {
			return notFound(err, "poolId", "pool")
		}
		if on && cur.Class != vps.ClassHosted {
			return h.refuse(cur.Class)
		}
		if pool, err = set(ctx, q); err != nil {
			return fmt.Errorf("set the pool's %s: %w", h.field, err)
		}
		if err := events.WakePending(ctx, q, id); err != nil {
			return err
		}
		ev.Details = map[string]any{h.field: on}
		return nil
	})
	return domain.PoolFromRow(pool), err
}

// Pool returns a pool the caller may use.
func (s *Service) Pool(ctx context.Context, id uuid.UUID) (domain.Pool, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.Pool{}, err
	}
	pool, err := s.q.GetPool(ctx, id)
	if err != nil {
		return domain.Pool{}, notFound(err, "id", "pool")
	}
	if pool.TenantID != nil && !p.CanSee(*pool.TenantID) {
		return domain.Pool{}, apierr.NotFoundf("id", "pool not found")
	}
	return domain.PoolFromRow(pool), nil
}

// Pools lists the pools the caller may use.
func (s *Service) Pools(ctx context.Context) ([]domain.Pool, error) {
	return list(ctx, "pools", s.q.ListPools, domain.PoolFromRow)
}

// MaxIPRange is the most addresses one IP range may hold (a /16): placement
// scans a pool's ranges for the lowest free address under the pool's lock.
const MaxIPRange = 1 << 16

// IPPoolInput adds an IPv4 range to a pool.
type IPPoolInput struct {
	PoolID     uuid.UUID
	CIDR       string
	Gateway    string
	RangeStart string
	RangeEnd   string
	DNS        []string
}

// CreateIPPool adds an address range to a pool. Operators only.
func (s *Service) CreateIPPool(ctx context.Context, in IPPoolInput) (domain.IPPool, error) {
	var ipp sqlc.IpPool
	err := s.mutate(ctx, ActCreateIPPool, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		params, err := parseIPPool(in)
		if err != nil {
			return err
		}
		if _, err := q.GetPool(ctx, in.PoolID); err != nil {
			return notFound(err, "poolId", "pool")
		}
		if ipp, err = q.CreateIPPool(ctx, params); err != nil {
			return fmt.Errorf("create IP pool: %w", err)
		}
		// Instances waiting for an address may be placed now.
		if err := events.WakePending(ctx, q, in.PoolID); err != nil {
			return err
		}
		ev.TargetID = ipp.ID
		ev.Details = map[string]any{"pool": ids.Encode(ids.Pool, in.PoolID), "cidr": in.CIDR}
		return nil
	})
	return domain.IPPoolFromRow(ipp), err
}

func parseIPPool(in IPPoolInput) (sqlc.CreateIPPoolParams, error) {
	prefix, err := netip.ParsePrefix(strings.TrimSpace(in.CIDR))
	if err != nil || !prefix.Addr().Is4() || prefix.Masked() != prefix {
		return sqlc.CreateIPPoolParams{}, apierr.Invalid("cidr", "must be an IPv4 network such as 10.0.0.0/24")
	}
	addr := func(field, s string) (netip.Addr, error) {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil || !prefix.Contains(a) {
			return a, apierr.Invalid(field, "must be an address in %s", prefix)
		}
		return a, nil
	}
	gw, err := addr("gateway", in.Gateway)
	if err != nil {
		return sqlc.CreateIPPoolParams{}, err
	}
	start, err := addr("rangeStart", in.RangeStart)
	if err != nil {
		return sqlc.CreateIPPoolParams{}, err
	}
	end, err := addr("rangeEnd", in.RangeEnd)
	if err != nil {
		return sqlc.CreateIPPoolParams{}, err
	}
	if end.Less(start) {
		return sqlc.CreateIPPoolParams{}, apierr.Invalid("rangeEnd", "must not be before rangeStart")
	}
	if n := domain.RangeSize(start, end); n > MaxIPRange {
		return sqlc.CreateIPPoolParams{}, apierr.Invalid("rangeEnd", "the range holds %d addresses, at most %d are allowed", n, MaxIPRange)
	}
	if !gw.Less(start) && !end.Less(gw) {
		return sqlc.CreateIPPoolParams{}, apierr.Invalid("gateway", "must be outside the range")
	}
	dns := make([]netip.Addr, len(in.DNS))
	for i, d := range in.DNS {
		if dns[i], err = netip.ParseAddr(strings.TrimSpace(d)); err != nil {
			return sqlc.CreateIPPoolParams{}, apierr.Invalid(fmt.Sprintf("dns[%d]", i), "must be an IP address")
		}
	}
	return sqlc.CreateIPPoolParams{ID: ids.New(), PoolID: in.PoolID, Cidr: prefix, Gateway: gw, RangeStart: start, RangeEnd: end, Dns: dns}, nil
}
