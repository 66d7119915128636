package control

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// APITokenInput asks for a new principal and its token.
type APITokenInput struct {
	// Name names the principal and its token.
	Name string
	// TenantID makes a member of that tenant; zero makes an operator.
	TenantID uuid.UUID
	// ExpiresAt is when the token stops working; nil: never.
	ExpiresAt *time.Time
}

// NewAPIToken is a created token. Secret is shown once and never stored.
type NewAPIToken struct {
	// ID is the token's; APIToken reads it.
	ID     uuid.UUID
	Role   iam.Role
	Tenant *uuid.UUID
	Secret string
}

// CreateAPIToken creates a principal with a token. Operators only.
func (s *Service) CreateAPIToken(ctx context.Context, in APITokenInput) (NewAPIToken, error) {
	var out NewAPIToken
	err := s.mutate(ctx, ActCreateAPIToken, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		var err error
		out, err = issueToken(ctx, q, in)
		if err != nil {
			return err
		}
		ev.TargetID = out.ID
		if out.Tenant != nil {
			ev.TenantID = *out.Tenant
		}
		ev.Details = map[string]any{"name": in.Name, "role": out.Role}
		return nil
	})
	return out, err
}

func issueToken(ctx context.Context, q *sqlc.Queries, in APITokenInput) (NewAPIToken, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 100 {
		return NewAPIToken{}, apierr.Invalid("name", "must be 1-100 characters")
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(time.Now()) {
		return NewAPIToken{}, apierr.Invalid("expiresAt", "must be in the future")
	}
	out := NewAPIToken{Role: iam.Operator}
	if in.TenantID != uuid.Nil {
		if _, err := q.LockTenant(ctx, in.TenantID); err != nil {
			return NewAPIToken{}, notFound(err, "tenantId", "tenant")
		}
		out.Role, out.Tenant = iam.Member, &in.TenantID
	}
	p, err := q.CreatePrincipal(ctx, sqlc.CreatePrincipalParams{ID: ids.New(), Name: in.Name, Role: string(out.Role), TenantID: out.Tenant})
	if err != nil {
		return NewAPIToken{}, fmt.Errorf("create principal: %w", err)
	}
	secret, hash := iam.NewToken()
	out.Secret = secret
	t, err := q.CreateAPIToken(ctx, sqlc.CreateAPITokenParams{ID: ids.New(), PrincipalID: p.ID, Name: in.Name, Hash: hash, ExpiresAt: in.ExpiresAt})
	if err != nil {
		return NewAPIToken{}, fmt.Errorf("create token: %w", err)
	}
	out.ID = t.ID
	return out, nil
}

// RevokeAPIToken revokes a token; revoking twice is harmless. Operators
// only. APIToken reads the revoked token.
func (s *Service) RevokeAPIToken(ctx context.Context, id uuid.UUID) error {
	return s.mutate(ctx, ActRevokeAPIToken, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		if _, err := operator(ctx); err != nil {
			return err
		}
		if _, err := q.RevokeAPIToken(ctx, id); err != nil {
			return notFound(err, "id", "API token")
		}
		return nil
	})
}

// APIToken returns a token. Operators only.
func (s *Service) APIToken(ctx context.Context, id uuid.UUID) (domain.APIToken, error) {
	if _, err := operator(ctx); err != nil {
		return domain.APIToken{}, err
	}
	t, err := s.q.GetAPIToken(ctx, id)
	if err != nil {
		return domain.APIToken{}, notFound(err, "id", "API token")
	}
	return domain.APITokenFromRow(t), nil
}

// APITokens lists every API token, revoked and expired ones too: for
// operators only.
func (s *Service) APITokens(ctx context.Context) ([]domain.APIToken, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	rows, err := s.q.ListAPITokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("list API tokens: %w", err)
	}
	return mapRows(rows, func(r sqlc.ListAPITokensRow) domain.APIToken { return domain.APITokenFromRow(sqlc.GetAPITokenRow(r)) }), nil
}

// Principal returns a principal the caller may see.
func (s *Service) Principal(ctx context.Context, id uuid.UUID) (domain.Principal, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.Principal{}, err
	}
	pr, err := s.q.GetPrincipal(ctx, id)
	if err != nil {
		return domain.Principal{}, notFound(err, "id", "principal")
	}
	tenant := uuid.Nil
	if pr.TenantID != nil {
		tenant = *pr.TenantID
	}
	if !p.IsOperator() && (tenant == uuid.Nil || tenant != p.TenantID) {
		return domain.Principal{}, apierr.NotFoundf("id", "principal not found")
	}
	return domain.PrincipalFromRow(pr), nil
}

// System is the principal of operator commands run on the server itself
// (better-compute token, bootstrap); its audit events carry no principal.
var System = &iam.Principal{Name: "system", Role: iam.Operator}

// IssueToken creates a principal and token from the command line.
func (s *Service) IssueToken(ctx context.Context, in APITokenInput) (NewAPIToken, error) {
	return s.CreateAPIToken(iam.WithPrincipal(audit.WithRequestID(ctx, "cli"), System), in)
}

// EnsureBootstrapToken makes token an operator token, once: the
// BC_BOOTSTRAP_TOKEN of a fresh deployment. Later starts find it and write
// nothing; two servers starting at once make one.
func (s *Service) EnsureBootstrapToken(ctx context.Context, token string) error {
	if len(token) < 16 {
		return errors.New("bootstrap token: must be at least 16 characters")
	}
	hash := iam.Hash(token)
	if _, err := s.q.FindBootstrapToken(ctx, hash); err == nil {
		return nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("find bootstrap token: %w", err)
	}
	ctx = iam.WithPrincipal(audit.WithRequestID(ctx, "bootstrap"), System)
	err := s.mutate(ctx, ActBootstrapToken, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		p, err := q.CreatePrincipal(ctx, sqlc.CreatePrincipalParams{ID: ids.New(), Name: "bootstrap", Role: string(iam.Operator)})
		if err != nil {
			return fmt.Errorf("create bootstrap principal: %w", err)
		}
		t, err := q.CreateAPIToken(ctx, sqlc.CreateAPITokenParams{ID: ids.New(), PrincipalID: p.ID, Name: "bootstrap", Hash: hash})
		if err != nil {
			return fmt.Errorf("create bootstrap token: %w", err)
		}
		ev.TargetID = t.ID
		return nil
	})
	if apierr.CodeOf(err) == apierr.Conflict {
		return nil // another server made it
	}
	return err
}
