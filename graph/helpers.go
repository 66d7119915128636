package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/lifecycle"
)

func (r *Resolver) setDesiredState(ctx context.Context, id string, want lifecycle.Desired) (model.InstancePayload, error) {
	uid, err := decodeID(ids.Instance, "id", id)
	if err != nil {
		return model.InstancePayload{}, r.svc.Reject(ctx, control.DesiredStateActions[want], err)
	}
	inst, err := r.svc.SetDesiredState(ctx, uid, want)
	return model.InstancePayload{Instance: inst}, err
}

func (r *Resolver) apiToken(ctx context.Context, id uuid.UUID) (model.APIToken, error) {
	t, err := r.svc.APIToken(ctx, id)
	if err != nil {
		return model.APIToken{}, err
	}
	toks, err := r.apiTokenModels(ctx, []domain.APIToken{t})
	if err != nil {
		return model.APIToken{}, err
	}
	return toks[0], nil
}

// apiTokenModels are tokens as the schema shows them, with their tenants
// read in one query (a deleted tenant's too: its revoked tokens stay
// listed).
func (r *Resolver) apiTokenModels(ctx context.Context, ts []domain.APIToken) ([]model.APIToken, error) {
	var keys []uuid.UUID
	for _, t := range ts {
		if t.TenantID != nil {
			keys = append(keys, *t.TenantID)
		}
	}
	tenants, err := r.svc.TenantsByID(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]model.APIToken, len(ts))
	for i, t := range ts {
		out[i] = model.APIToken{
			ID: ids.Encode(ids.APIToken, t.ID), Name: t.Name, Role: roleOf(t.Role),
			CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt,
		}
		if t.TenantID != nil {
			if tenant, ok := tenants[*t.TenantID]; ok {
				out[i].Tenant = &tenant
			}
		}
	}
	return out, nil
}

// node resolves any typed ID the caller may see. Everything else, another
// tenant's object included, is the same NOT_FOUND.
func (r *Resolver) node(ctx context.Context, id string) (model.Node, error) {
	if seq, ok := ids.DecodeSeq(ids.AuditEvent, id); ok {
		ev, err := r.svc.AuditEvent(ctx, seq)
		return ev, err
	}
	kind, uid, ok := ids.Parse(id)
	if !ok {
		return nil, apierr.Invalid("id", "not a valid ID")
	}
	var (
		n   model.Node
		err error
	)
	switch kind {
	case ids.Instance:
		n, err = r.svc.Instance(ctx, uid)
	case ids.Tenant:
		n, err = r.svc.Tenant(ctx, uid)
	case ids.Principal:
		n, err = r.svc.Principal(ctx, uid)
	case ids.Pool:
		n, err = r.svc.Pool(ctx, uid)
	case ids.Host:
		n, err = r.svc.Host(ctx, uid)
	case ids.Flavor:
		n, err = r.svc.Flavor(ctx, uid)
	case ids.Image:
		n, err = r.svc.Image(ctx, uid)
	case ids.APIToken:
		n, err = r.apiToken(ctx, uid)
	case ids.ProviderAccount:
		n, err = r.svc.ProviderAccount(ctx, uid)
	case ids.SandboxTemplate:
		n, err = r.svc.SandboxTemplate(ctx, uid)
	case ids.Sandbox:
		n, err = r.svc.Sandbox(ctx, uid)
	case ids.SandboxSnapshot:
		n, err = r.svc.SandboxSnapshot(ctx, uid)
	case ids.ProviderBootstrap:
		n, err = r.svc.ProviderBootstrap(ctx, uid)
	default:
		err = apierr.NotFoundf("id", "not found")
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

func roleOf(role string) model.Role {
	if role == string(iam.Operator) {
		return model.RoleOperator
	}
	return model.RoleMember
}

// callerOf returns the authenticated principal of ctx.
func callerOf(ctx context.Context) (*iam.Principal, error) {
	p := iam.FromContext(ctx)
	if p == nil {
		return nil, apierr.New(apierr.Unauthenticated, "authentication required")
	}
	return p, nil
}

// wantsField reports whether the query selects field of the current object,
// so costly fields such as totalCount are computed only when asked for.
func wantsField(ctx context.Context, field string) bool {
	for _, f := range graphql.CollectFieldsCtx(ctx, nil) {
		if f.Name == field {
			return true
		}
	}
	return false
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
