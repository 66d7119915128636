package control

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// CreateTenant creates a tenant. Operators only.
func (s *Service) CreateTenant(ctx context.Context, name string) (domain.Tenant, error) {
	var t sqlc.Tenant
	err := s.mutate(ctx, ActCreateTenant, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		name = strings.TrimSpace(name)
		if name == "" || len(name) > 100 {
			return apierr.Invalid("name", "must be 1-100 characters")
		}
		var err error
		if t, err = q.CreateTenant(ctx, sqlc.CreateTenantParams{ID: ids.New(), Name: name}); err != nil {
			return fmt.Errorf("create tenant: %w", err)
		}
		ev.TenantID, ev.TargetID = t.ID, t.ID
		ev.Details = map[string]any{"name": name}
		return nil
	})
	return domain.TenantFromRow(t), err
}

// DeleteTenant deletes a tenant: it is gone from the API at once (its
// tokens refused, its objects NOT_FOUND), and every registered
// tenant-deleted handler (OnTenantDeleted) ends what its module holds of
// it in the same transaction; the reconciler then releases what those
// objects held. Operators only.
func (s *Service) DeleteTenant(ctx context.Context, id uuid.UUID) (domain.Tenant, error) {
	var t sqlc.Tenant
	err := s.mutate(ctx, ActDeleteTenant, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		if _, err := operator(ctx); err != nil {
			return err
		}
		if _, err := q.LockTenant(ctx, id); err != nil {
			return notFound(err, "id", "tenant")
		}
		ev.TenantID = id
		var err error
		if t, err = q.GetTenant(ctx, id); err != nil {
			return fmt.Errorf("read tenant: %w", err)
		}
		if err := q.SoftDeleteTenant(ctx, id); err != nil {
			return fmt.Errorf("delete tenant: %w", err)
		}
		ev.Details, err = s.tenantDeleted.run(ctx, q, id)
		return err
	})
	return domain.TenantFromRow(t), err
}

// QuotaInput sets a tenant's limits; nil is unlimited.
type QuotaInput struct {
	TenantID  uuid.UUID
	Instances *int32
	Vcpus     *int32
	MemoryMB  *int64
	GPUs      *int32
	// Snapshots bounds the live sandbox snapshots; SnapshotBytes the bytes
	// of the READY ones.
	Snapshots     *int32
	SnapshotBytes *int64
}

// SetQuota replaces a tenant's quota. Operators only.
func (s *Service) SetQuota(ctx context.Context, in QuotaInput) (domain.Quota, error) {
	var quota sqlc.Quota
	err := s.mutate(ctx, ActSetQuota, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = in.TenantID
		if _, err := operator(ctx); err != nil {
			return err
		}
		for field, v := range map[string]*int64{"instances": i64(in.Instances), "vcpus": i64(in.Vcpus), "memoryMb": in.MemoryMB, "gpus": i64(in.GPUs),
			"snapshots": i64(in.Snapshots), "snapshotBytes": in.SnapshotBytes} {
			if v != nil && *v < 0 {
				return apierr.Invalid(field, "must not be negative")
			}
		}
		if _, err := q.LockTenant(ctx, in.TenantID); err != nil {
			return notFound(err, "tenantId", "tenant")
		}
		ev.TenantID = in.TenantID
		var err error
		quota, err = q.SetQuota(ctx, sqlc.SetQuotaParams{
			TenantID: in.TenantID, MaxInstances: in.Instances, MaxVcpus: in.Vcpus, MaxMemoryMb: in.MemoryMB, MaxGpus: in.GPUs,
			MaxSnapshots: in.Snapshots, MaxSnapshotBytes: in.SnapshotBytes,
		})
		if err != nil {
			return fmt.Errorf("set quota: %w", err)
		}
		ev.Details = map[string]any{"instances": in.Instances, "vcpus": in.Vcpus, "memoryMb": in.MemoryMB, "gpus": in.GPUs,
			"snapshots": in.Snapshots, "snapshotBytes": in.SnapshotBytes}
		return nil
	})
	return domain.QuotaFromRow(quota), err
}

// Tenant returns a live tenant the caller may see.
func (s *Service) Tenant(ctx context.Context, id uuid.UUID) (domain.Tenant, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.Tenant{}, err
	}
	if !p.CanSee(id) {
		return domain.Tenant{}, apierr.NotFoundf("id", "tenant not found")
	}
	t, err := s.q.GetTenant(ctx, id)
	if err != nil {
		return domain.Tenant{}, notFound(err, "id", "tenant")
	}
	return domain.TenantFromRow(t), nil
}

// Tenants lists live tenants. Operators only.
func (s *Service) Tenants(ctx context.Context) ([]domain.Tenant, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	ts, err := s.q.ListTenants(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return mapRows(ts, domain.TenantFromRow), nil
}

// Quota returns a tenant's quota (all limits nil when it has none) and usage.
func (s *Service) Quota(ctx context.Context, tenant uuid.UUID) (domain.Quota, domain.Usage, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.Quota{}, domain.Usage{}, err
	}
	if !p.CanSee(tenant) {
		return domain.Quota{}, domain.Usage{}, apierr.NotFoundf("id", "tenant not found")
	}
	quota, err := s.q.GetQuota(ctx, tenant)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return domain.Quota{}, domain.Usage{}, fmt.Errorf("read quota: %w", err)
	}
	usage, err := s.q.TenantUsage(ctx, tenant)
	if err != nil {
		return domain.Quota{}, domain.Usage{}, fmt.Errorf("count usage: %w", err)
	}
	snaps, err := s.q.SnapshotUsage(ctx, tenant)
	if err != nil {
		return domain.Quota{}, domain.Usage{}, fmt.Errorf("count snapshots: %w", err)
	}
	u := domain.UsageFromRow(usage)
	u.Snapshots, u.SnapshotBytes = snaps.Snapshots, snaps.Bytes
	return domain.QuotaFromRow(quota), u, nil
}
