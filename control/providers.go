package control

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// The provider kinds a deployment may allow.
const (
	ProviderHetzner = "hetzner"
	ProviderProxmox = "proxmox"
)

// ProviderAccountInput registers an account at a cloud provider.
type ProviderAccountInput struct {
	// TenantID owns the account; zero makes a shared one (operators only).
	// Members may leave it zero for their own tenant.
	TenantID uuid.UUID
	Name     string
	Provider string
	// Credentials are sealed at rest and never returned: the Hetzner API
	// token, or the Proxmox API token ("USER@REALM!TOKENID=SECRET").
	Credentials string
	// Settings are the provider's: Hetzner's location; Proxmox's endpoint,
	// node, storage and template. They are stored as JSON, once
	// Config.ProviderSettings has checked them, and the endpoint against
	// the operator's policy.
	Settings map[string]any
}

// CreateProviderAccount registers a provider account for a tenant (members:
// their own) or, for operators, a shared one.
func (s *Service) CreateProviderAccount(ctx context.Context, in ProviderAccountInput) (domain.ProviderAccount, error) {
	var acct sqlc.ProviderAccount
	err := s.mutate(ctx, ActCreateProviderAccount, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		p, err := caller(ctx)
		if err != nil {
			return err
		}
		var tenant *uuid.UUID
		switch {
		case !p.IsOperator() && in.TenantID == uuid.Nil:
			tenant = &p.TenantID
		case !p.CanSee(in.TenantID):
			return apierr.NotFoundf("tenantId", "tenant not found")
		case in.TenantID != uuid.Nil:
			tenant = &in.TenantID
		}
		if tenant != nil {
			if _, err := q.LockTenant(ctx, *tenant); err != nil {
				return notFound(err, "tenantId", "tenant")
			}
			ev.TenantID = *tenant
		}
		in.Name = strings.TrimSpace(in.Name)
		switch {
		case in.Name == "" || len(in.Name) > 100:
			return apierr.Invalid("name", "must be 1-100 characters")
		case !slices.Contains(s.providers, in.Provider):
			return apierr.Invalid("provider", "this deployment allows provider accounts of %s", strings.Join(s.providers, ", "))
		}
		id := ids.New()
		settings := settingsJSON(in.Settings)
		sealed, err := s.accountSecrets(id, in.Provider, in.Credentials, settings, tenant == nil)
		if err != nil {
			return err
		}
		acct, err = q.CreateProviderAccount(ctx, sqlc.CreateProviderAccountParams{
			ID: id, TenantID: tenant, Provider: in.Provider, Name: in.Name,
			CredentialsSealed: sealed, Settings: settings,
		})
		if err != nil {
			return fmt.Errorf("create provider account: %w", err)
		}
		ev.TargetID = acct.ID
		ev.Details = map[string]any{"name": in.Name, "provider": in.Provider} // never the credentials
		return nil
	})
	return domain.ProviderAccountFromRow(acct), err
}

// accountSecrets validates an account's credentials and settings (JSON, as
// stored; shared: of no tenant) and returns the credentials sealed to the
// account's ID.
func (s *Service) accountSecrets(id uuid.UUID, provider, credentials string, settings []byte, shared bool) (sealed []byte, err error) {
	switch {
	case strings.TrimSpace(credentials) == "":
		return nil, apierr.Invalid("credentials", "are required")
	case len(credentials) > 4096:
		return nil, apierr.Invalid("credentials", "at most 4096 bytes")
	}
	if check := s.providerSettings[provider]; check != nil {
		if err := check(settings, shared); err != nil {
			return nil, err
		}
	}
	if s.sealer == nil {
		return nil, fmt.Errorf("no sealer configured for credentials")
	}
	return s.sealer.Seal([]byte(credentials), id[:]), nil
}

// settingsJSON is an account's settings as stored: a JSON object.
func settingsJSON(settings map[string]any) []byte {
	b, err := json.Marshal(settings)
	if err != nil || settings == nil {
		return []byte("{}")
	}
	return b
}

// UpdateProviderAccountInput replaces an account's credentials or
// settings; a nil field is kept.
type UpdateProviderAccountInput struct {
	ID          uuid.UUID
	Credentials *string
	Settings    map[string]any
}

// UpdateProviderAccount replaces an account's credentials (its provider
// token was rotated) or settings. Members may update their tenant's;
// shared ones are the operators'.
func (s *Service) UpdateProviderAccount(ctx context.Context, in UpdateProviderAccountInput) (domain.ProviderAccount, error) {
	var acct sqlc.ProviderAccount
	err := s.mutate(ctx, ActUpdateProviderAccount, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		cur, err := s.lockOwnedAccount(ctx, q, ev, in.ID)
		if err != nil {
			return err
		}
		credentials := ""
		if in.Credentials != nil {
			credentials = *in.Credentials
		} else {
			open, err := s.sealer.Open(cur.CredentialsSealed, cur.ID[:])
			if err != nil {
				return fmt.Errorf("open credentials: %w", err)
			}
			credentials = string(open)
		}
		settings := cur.Settings
		if in.Settings != nil {
			settings = settingsJSON(in.Settings)
		}
		sealed, err := s.accountSecrets(cur.ID, cur.Provider, credentials, settings, cur.TenantID == nil)
		if err != nil {
			return err
		}
		if acct, err = q.UpdateProviderAccount(ctx, sqlc.UpdateProviderAccountParams{ID: cur.ID, CredentialsSealed: sealed, Settings: settings}); err != nil {
			return fmt.Errorf("update provider account: %w", err)
		}
		// Never the credentials: only that they changed.
		ev.Details = map[string]any{"credentials": in.Credentials != nil, "settings": in.Settings != nil}
		return nil
	})
	return domain.ProviderAccountFromRow(acct), err
}

// lockOwnedAccount locks an account the caller may change: members their
// tenant's, operators any. It names the account in ev.
func (s *Service) lockOwnedAccount(ctx context.Context, q *sqlc.Queries, ev *audit.Event, id uuid.UUID) (sqlc.ProviderAccount, error) {
	ev.TargetID = id
	p, err := caller(ctx)
	if err != nil {
		return sqlc.ProviderAccount{}, err
	}
	acct, err := q.LockProviderAccount(ctx, id)
	if err != nil {
		return acct, notFound(err, "id", "provider account")
	}
	switch {
	case acct.TenantID != nil && !p.CanSee(*acct.TenantID):
		return sqlc.ProviderAccount{}, apierr.NotFoundf("id", "provider account not found")
	case acct.TenantID == nil && !p.IsOperator():
		return sqlc.ProviderAccount{}, apierr.New(apierr.Forbidden, "shared provider accounts are the operators'")
	}
	if acct.TenantID != nil {
		ev.TenantID = *acct.TenantID
	}
	return acct, nil
}

// ProviderAccount returns an account the caller may see.
func (s *Service) ProviderAccount(ctx context.Context, id uuid.UUID) (domain.ProviderAccount, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.ProviderAccount{}, err
	}
	acct, err := s.q.GetProviderAccount(ctx, id)
	if err != nil {
		return domain.ProviderAccount{}, notFound(err, "id", "provider account")
	}
	if acct.TenantID != nil && !p.CanSee(*acct.TenantID) {
		return domain.ProviderAccount{}, apierr.NotFoundf("id", "provider account not found")
	}
	return domain.ProviderAccountFromRow(acct), nil
}

// ProviderAccounts lists the accounts the caller may see.
func (s *Service) ProviderAccounts(ctx context.Context) ([]domain.ProviderAccount, error) {
	return list(ctx, "provider accounts", s.q.ListProviderAccounts, domain.ProviderAccountFromRow)
}

// DeleteProviderAccount deletes an account, refused while instances use it.
// Members may delete their tenant's; shared ones are the operators'.
func (s *Service) DeleteProviderAccount(ctx context.Context, id uuid.UUID) (domain.ProviderAccount, error) {
	var acct sqlc.ProviderAccount
	err := s.mutate(ctx, ActDeleteProviderAccount, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		var err error
		if acct, err = s.lockOwnedAccount(ctx, q, ev, id); err != nil {
			return err
		}
		used, err := q.ProviderAccountInUse(ctx, &id)
		if err != nil {
			return fmt.Errorf("check provider account use: %w", err)
		}
		if used {
			return apierr.New(apierr.FailedPrecondition, "instances still run on provider account %s", acct.Name)
		}
		return q.SoftDeleteProviderAccount(ctx, id)
	})
	return domain.ProviderAccountFromRow(acct), err
}
