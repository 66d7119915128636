package control

import (
	"context"
	"fmt"
	"regexp"

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

// ProviderBootstrapInput asks for a host from a provider account.
type ProviderBootstrapInput struct {
	// ProviderAccountID is an operators' (shared) provider account.
	ProviderAccountID uuid.UUID
	// PoolID is the hosted pool (class vps-host) the host joins.
	PoolID uuid.UUID
	// Name becomes the machine's and the host's name: a slug no host or
	// bootstrap has.
	Name string
	// ServerType is the provider's server type (Hetzner, such as cx22) or
	// the size "<vCPUs>x<memory MiB>" (Proxmox).
	ServerType string
	// Image is the provider's image name (Hetzner) or template VMID
	// (Proxmox); it must carry the better-compute binary.
	Image string
}

// providerValue is a server type or image: what a provider's API names.
var providerValue = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$`)

// CreateProviderBootstrap records a bootstrap and wakes the reconciler,
// which creates the machine. Operators only.
func (s *Service) CreateProviderBootstrap(ctx context.Context, in ProviderBootstrapInput) (domain.ProviderBootstrap, error) {
	var b sqlc.ProviderBootstrap
	err := s.mutate(ctx, ActCreateProviderBootstrap, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		switch {
		case !slug.MatchString(in.Name):
			return apierr.Invalid("name", "must be a lowercase slug of at most 63 characters")
		case !providerValue.MatchString(in.ServerType):
			return apierr.Invalid("serverType", "must be 1-100 letters, digits and . _ : -")
		case !providerValue.MatchString(in.Image):
			return apierr.Invalid("image", "must be 1-100 letters, digits and . _ : -")
		}
		acct, err := q.LockProviderAccount(ctx, in.ProviderAccountID)
		if err != nil {
			return notFound(err, "providerAccountId", "provider account")
		}
		if acct.TenantID != nil {
			return apierr.Invalid("providerAccountId", "a tenant's provider account cannot rent hosts: use an operators' (shared) account")
		}
		pool, err := q.GetPool(ctx, in.PoolID)
		if err != nil {
			return notFound(err, "poolId", "pool")
		}
		if pool.Class != vps.ClassHosted {
			return apierr.Invalid("poolId", "hosts join pools of class %s, not %s", vps.ClassHosted, pool.Class)
		}
		taken, err := q.HostNameTaken(ctx, in.Name)
		if err != nil {
			return fmt.Errorf("check host name: %w", err)
		}
		if taken {
			return &apierr.Error{Code: apierr.Conflict, Field: "name", Message: fmt.Sprintf("a host or provider bootstrap is named %s", in.Name)}
		}
		if b, err = q.CreateProviderBootstrap(ctx, sqlc.CreateProviderBootstrapParams{
			ID: ids.New(), ProviderAccountID: acct.ID, PoolID: pool.ID, Name: in.Name, ServerType: in.ServerType, Image: in.Image,
		}); err != nil {
			return fmt.Errorf("create provider bootstrap: %w", err)
		}
		if err := events.RecordBootstrap(ctx, q, events.Created, b); err != nil {
			return err
		}
		if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicBootstraps, Key: b.ID}); err != nil {
			return fmt.Errorf("wake the bootstraps reconciler: %w", err)
		}
		ev.TargetID = b.ID
		ev.Details = map[string]any{"name": in.Name, "providerAccount": acct.Name, "pool": pool.Name, "serverType": in.ServerType, "image": in.Image}
		return nil
	})
	return domain.ProviderBootstrapFromRow(b), err
}

// ProviderBootstraps lists the bootstraps, newest first (at most 500).
// Operators only.
func (s *Service) ProviderBootstraps(ctx context.Context) ([]domain.ProviderBootstrap, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	rows, err := s.q.ListProviderBootstraps(ctx)
	if err != nil {
		return nil, fmt.Errorf("list provider bootstraps: %w", err)
	}
	return mapRows(rows, domain.ProviderBootstrapFromRow), nil
}

// ProviderBootstrap returns a bootstrap. Operators only; members are told
// it does not exist.
func (s *Service) ProviderBootstrap(ctx context.Context, id uuid.UUID) (domain.ProviderBootstrap, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.ProviderBootstrap{}, err
	}
	if !p.IsOperator() {
		return domain.ProviderBootstrap{}, apierr.NotFoundf("id", "provider bootstrap not found")
	}
	b, err := s.q.GetProviderBootstrap(ctx, id)
	if err != nil {
		return domain.ProviderBootstrap{}, notFound(err, "id", "provider bootstrap")
	}
	return domain.ProviderBootstrapFromRow(b), nil
}

// ProviderBootstrapAccount returns a bootstrap's provider account, even one
// deleted since. Operators only.
func (s *Service) ProviderBootstrapAccount(ctx context.Context, b domain.ProviderBootstrap) (domain.ProviderAccount, error) {
	if _, err := operator(ctx); err != nil {
		return domain.ProviderAccount{}, err
	}
	acct, err := s.q.ProviderAccountOfBootstrap(ctx, b.ProviderAccountID)
	if err != nil {
		return domain.ProviderAccount{}, notFound(err, "providerAccount", "provider account")
	}
	return domain.ProviderAccountFromRow(acct), nil
}
