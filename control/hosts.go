package control

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// HostCredentialPrefix starts every host credential.
const HostCredentialPrefix = "bch_"

// NewHost is an adopted host. Credential and Join are shown once and
// never stored.
type NewHost struct {
	Host domain.Host
	// Credential is its bearer credential; empty when none was asked for.
	Credential string
	// Join is its one-time join token and the command that uses it.
	Join HostJoin
}

// HostInput adopts a host.
type HostInput struct {
	// PoolID is the hosted pool it joins.
	PoolID uuid.UUID
	// Name is a lowercase slug.
	Name string
	// BearerCredential also gives it a bearer credential, the fallback for
	// a deployment that terminates TLS in front of serve; without one it
	// proves itself by certificate alone.
	BearerCredential bool
}

// CreateHost adopts a host with a bearer credential and a join token.
// Operators only.
func (s *Service) CreateHost(ctx context.Context, poolID uuid.UUID, name string) (NewHost, error) {
	return s.AdoptHost(ctx, HostInput{PoolID: poolID, Name: name, BearerCredential: true})
}

// AdoptHost adopts a hypervisor host into a hosted pool, with a one-time
// join token and, when asked, a bearer credential. Operators only.
func (s *Service) AdoptHost(ctx context.Context, in HostInput) (NewHost, error) {
	var out NewHost
	pin, err := s.joinPin(ctx)
	if err != nil {
		return out, err
	}
	err = s.mutate(ctx, ActCreateHost, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		if !slug.MatchString(in.Name) {
			return apierr.Invalid("name", "must be a lowercase slug of at most 63 characters")
		}
		pool, err := q.GetPool(ctx, in.PoolID)
		if err != nil {
			return notFound(err, "poolId", "pool")
		}
		if pool.Class != vps.ClassHosted {
			return apierr.Invalid("poolId", "hosts join pools of class %s, not %s", vps.ClassHosted, pool.Class)
		}
		var hash []byte
		if in.BearerCredential {
			out.Credential, hash = iam.NewSecret(HostCredentialPrefix)
		}
		host, err := q.CreateHost(ctx, sqlc.CreateHostParams{ID: ids.New(), PoolID: in.PoolID, Name: in.Name, CredentialHash: hash})
		if err != nil {
			return fmt.Errorf("create host: %w", err)
		}
		if out.Join, err = s.newJoinToken(ctx, q, host.ID, pin); err != nil {
			return err
		}
		out.Host = domain.HostFromRow(host)
		ev.TargetID = host.ID
		ev.Details = map[string]any{"name": in.Name, "pool": pool.Name, "bearerCredential": in.BearerCredential}
		return nil
	})
	return out, err
}

// HostCapacityInput sets what a host can give to instances.
type HostCapacityInput struct {
	HostID   uuid.UUID
	Vcpus    int32
	MemoryMB int64
	DiskGB   int64
	GPUs     []domain.GPU
}

// SetHostCapacity replaces a host's capacity and GPU inventory. Operators only.
func (s *Service) SetHostCapacity(ctx context.Context, in HostCapacityInput) (domain.Host, error) {
	var host sqlc.Host
	err := s.mutate(ctx, ActSetHostCapacity, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = in.HostID
		if _, err := operator(ctx); err != nil {
			return err
		}
		if in.Vcpus < 0 {
			return apierr.Invalid("vcpus", "must not be negative")
		}
		if in.MemoryMB < 0 {
			return apierr.Invalid("memoryMb", "must not be negative")
		}
		if in.DiskGB < 0 {
			return apierr.Invalid("diskGb", "must not be negative")
		}
		var err error
		if host, err = q.GetHost(ctx, in.HostID); err != nil {
			return notFound(err, "hostId", "host")
		}
		if _, err := q.SetHostCapacity(ctx, sqlc.SetHostCapacityParams{HostID: in.HostID, Vcpus: in.Vcpus, MemoryMb: in.MemoryMB, DiskGb: in.DiskGB}); err != nil {
			return fmt.Errorf("set capacity: %w", err)
		}
		keep := make([]string, len(in.GPUs))
		for i, g := range in.GPUs {
			keep[i] = strings.ToLower(strings.TrimSpace(g.Address))
			if !domain.IsPCIAddress(keep[i]) {
				return apierr.Invalid(fmt.Sprintf("gpus[%d].address", i), "must be a PCI address such as 0000:65:00.0")
			}
			if strings.TrimSpace(g.Model) == "" {
				return apierr.Invalid(fmt.Sprintf("gpus[%d].model", i), "is required")
			}
		}
		// A GPU that stays keeps its health: setting capacity clears no
		// unhealthy mark.
		if err := q.DeleteHostGPUsExcept(ctx, sqlc.DeleteHostGPUsExceptParams{HostID: in.HostID, Keep: keep}); err != nil {
			return fmt.Errorf("remove GPUs: %w", err)
		}
		for i, g := range in.GPUs {
			if err := q.PutHostGPU(ctx, sqlc.PutHostGPUParams{HostID: in.HostID, Address: keep[i], Vendor: g.Vendor, Model: g.Model}); err != nil {
				return fmt.Errorf("set GPU %s: %w", keep[i], err)
			}
		}
		ev.Details = map[string]any{"vcpus": in.Vcpus, "memoryMb": in.MemoryMB, "diskGb": in.DiskGB, "gpus": len(in.GPUs)}
		return nil
	})
	return domain.HostFromRow(host), err
}

// SetHostDraining drains a host (nothing new is placed on it; what runs
// there keeps running) or returns it to service. Operators only.
func (s *Service) SetHostDraining(ctx context.Context, id uuid.UUID, draining bool) (domain.Host, error) {
	var host sqlc.Host
	err := s.mutate(ctx, ActSetHostDraining, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		if _, err := operator(ctx); err != nil {
			return err
		}
		var err error
		if host, err = q.SetHostDraining(ctx, sqlc.SetHostDrainingParams{ID: id, Draining: draining}); err != nil {
			return notFound(err, "hostId", "host")
		}
		ev.Details = map[string]any{"draining": draining}
		return nil
	})
	return domain.HostFromRow(host), err
}

// DeleteHost deletes a host that holds nothing: no instance but deleted
// ones, no snapshot files, no command under way (drain it, and move or
// delete what runs there, first). Its daemon is refused from then on (its
// certificates and credential go with it), and its name may be given
// again. Operators only.
func (s *Service) DeleteHost(ctx context.Context, id uuid.UUID) (domain.Host, error) {
	var host sqlc.Host
	err := s.mutate(ctx, ActDeleteHost, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		if _, err := operator(ctx); err != nil {
			return err
		}
		var err error
		if host, err = q.LockHost(ctx, id); err != nil {
			return notFound(err, "hostId", "host")
		}
		holds, err := q.HostHolds(ctx, id)
		if err != nil {
			return fmt.Errorf("count what host %s holds: %w", host.Name, err)
		}
		if holds.Instances+holds.Snapshots+holds.Commands > 0 {
			return apierr.New(apierr.FailedPrecondition, "host %s holds %d instances, the files of %d snapshots and %d commands under way: drain it, and move or delete what it holds, first",
				host.Name, holds.Instances, holds.Snapshots, holds.Commands)
		}
		if _, err := q.ForgetHost(ctx, id); err != nil {
			return fmt.Errorf("delete host %s: %w", host.Name, err)
		}
		ev.Details = map[string]any{"name": host.Name}
		return nil
	})
	return domain.HostFromRow(host), err
}

// Hosts lists every host. Operators only.
func (s *Service) Hosts(ctx context.Context) ([]domain.Host, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	hosts, err := s.q.ListHosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	return mapRows(hosts, domain.HostFromRow), nil
}

// Host returns a host. Operators only; members are told it does not exist.
func (s *Service) Host(ctx context.Context, id uuid.UUID) (domain.Host, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.Host{}, err
	}
	if !p.IsOperator() {
		return domain.Host{}, apierr.NotFoundf("id", "host not found")
	}
	h, err := s.q.GetHost(ctx, id)
	if err != nil {
		return domain.Host{}, notFound(err, "id", "host")
	}
	return domain.HostFromRow(h), nil
}

// ResetHostCredential gives a host a new credential, shown once; the old
// one stops working. Operators only.
func (s *Service) ResetHostCredential(ctx context.Context, hostID uuid.UUID) (NewHost, error) {
	var out NewHost
	err := s.mutate(ctx, ActResetHostCredential, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = hostID
		if _, err := operator(ctx); err != nil {
			return err
		}
		secret, hash := iam.NewSecret(HostCredentialPrefix)
		host, err := q.ResetHostCredential(ctx, sqlc.ResetHostCredentialParams{ID: hostID, CredentialHash: hash})
		if err != nil {
			return notFound(err, "hostId", "host")
		}
		out = NewHost{Host: domain.HostFromRow(host), Credential: secret}
		return nil
	})
	return out, err
}
