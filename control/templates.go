package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// SandboxTemplateInput asks for a sandbox template.
type SandboxTemplateInput struct {
	// TenantID owns the template and the quota its warm instances count
	// against. Members may leave it zero (their own tenant); operators
	// name it, or leave it zero for a public template of no tenant, which
	// has no warm pool.
	TenantID uuid.UUID
	// Public templates are visible to every tenant; operators only.
	Public bool
	Name   string
	// PoolID names a hosted pool; a public template's must be shared.
	PoolID   uuid.UUID
	FlavorID uuid.UUID
	ImageID  uuid.UUID
	// SSHKeys are authorized_keys lines; none is allowed.
	SSHKeys []string
	// Env is sealed at rest; the API shows its names only.
	Env []EnvVar
	// Network is the egress policy; nil allows the internet.
	Network *domain.NetworkPolicy
	// DefaultTimeout and MaxTimeout bound sandboxes' timeouts; zero takes
	// DefaultSandboxTimeout and DefaultSandboxMaxTimeout.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// WarmCount is how many instances wait booted and paused.
	WarmCount int
}

// SandboxTemplateUpdate changes a template; nil fields stay as they are.
// Its pool and owner never change.
type SandboxTemplateUpdate struct {
	ID             uuid.UUID
	Name           *string
	FlavorID       *uuid.UUID
	ImageID        *uuid.UUID
	SSHKeys        *[]string
	Env            *[]EnvVar
	Network        *domain.NetworkPolicy
	DefaultTimeout *time.Duration
	MaxTimeout     *time.Duration
	WarmCount      *int
}

// templateSpec is what a template says, checked as a whole on create and
// after an update is applied.
type templateSpec struct {
	name                       string
	poolID                     uuid.UUID
	flavorID, imageID          uuid.UUID
	sshKeys                    []string
	network                    domain.NetworkPolicy
	defaultTimeout, maxTimeout time.Duration
	warmCount                  int
}

// check checks a spec's own fields and normalizes its keys and network.
func (t *templateSpec) check(owned bool) error {
	if err := checkName("name", t.name); err != nil {
		return err
	}
	if len(t.sshKeys) > 0 {
		keys, err := parseSSHKeys(t.sshKeys)
		if err != nil {
			return err
		}
		t.sshKeys = keys
	}
	if t.sshKeys == nil {
		t.sshKeys = []string{}
	}
	network, err := checkNetwork("network", t.network)
	if err != nil {
		return err
	}
	t.network = network
	if err := checkTimeout("maxTimeout", t.maxTimeout, MaxSandboxTimeout); err != nil {
		return err
	}
	if err := checkTimeout("defaultTimeout", t.defaultTimeout, t.maxTimeout); err != nil {
		return err
	}
	switch {
	case t.warmCount < 0 || t.warmCount > MaxWarmCount:
		return apierr.Invalid("warmCount", "must be between 0 and %d", MaxWarmCount)
	case t.warmCount > 0 && !owned:
		return apierr.Invalid("warmCount", "a template of no tenant has no quota for warm instances; name the tenant that owns it")
	}
	return nil
}

// templateOwner decides who owns a new template: the member's tenant, or
// the tenant an operator names, none for an operator's public one.
func templateOwner(p *iam.Principal, tenant uuid.UUID, public bool) (*uuid.UUID, error) {
	switch {
	case !p.IsOperator() && public:
		return nil, apierr.Invalid("public", "only operators make public templates")
	case !p.IsOperator() && tenant == uuid.Nil:
		return &p.TenantID, nil
	case !p.IsOperator() && tenant != p.TenantID:
		return nil, apierr.NotFoundf("tenantId", "tenant not found")
	case p.IsOperator() && tenant == uuid.Nil && !public:
		return nil, apierr.Invalid("tenantId", "operators name the tenant, or make the template public")
	case tenant == uuid.Nil:
		return nil, nil
	}
	return &tenant, nil
}

// CreateSandboxTemplate records a sandbox template.
func (s *Service) CreateSandboxTemplate(ctx context.Context, in SandboxTemplateInput) (domain.SandboxTemplate, error) {
	var out domain.SandboxTemplate
	err := s.mutate(ctx, ActCreateSandboxTemplate, func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		p, err := caller(ctx)
		if err != nil {
			return err
		}
		owner, err := templateOwner(p, in.TenantID, in.Public)
		if err != nil {
			return err
		}
		spec := templateSpec{
			name: in.Name, poolID: in.PoolID, flavorID: in.FlavorID, imageID: in.ImageID, sshKeys: in.SSHKeys,
			network: domain.DefaultNetworkPolicy(), defaultTimeout: in.DefaultTimeout, maxTimeout: in.MaxTimeout, warmCount: in.WarmCount,
		}
		if in.Network != nil {
			spec.network = *in.Network
		}
		if spec.maxTimeout == 0 {
			spec.maxTimeout = max(DefaultSandboxMaxTimeout, spec.defaultTimeout)
		}
		if spec.defaultTimeout == 0 {
			spec.defaultTimeout = min(DefaultSandboxTimeout, spec.maxTimeout)
		}
		if err := spec.check(owner != nil); err != nil {
			return err
		}
		env, err := checkEnv("env", in.Env)
		if err != nil {
			return err
		}
		public := in.Public || owner == nil
		flavor, err := s.templateRefs(ctx, tx, q, owner, public, spec)
		if err != nil {
			return err
		}
		if owner != nil {
			// Serializes with the owner's other creates, for the quota.
			if _, err := q.LockTenant(ctx, *owner); err != nil {
				return notFound(err, "tenantId", "tenant")
			}
			ev.TenantID = *owner
		}
		id := ids.New()
		if err := s.templateNameFree(ctx, q, owner, spec.name, id); err != nil {
			return err
		}
		if err := s.checkWarmQuota(ctx, q, owner, id, flavor, spec.warmCount); err != nil {
			return err
		}
		sealed, err := s.sealEnv(env, id)
		if err != nil {
			return err
		}
		network, err := json.Marshal(spec.network)
		if err != nil {
			return fmt.Errorf("encode network policy: %w", err)
		}
		row, err := q.InsertSandboxTemplate(ctx, sqlc.InsertSandboxTemplateParams{
			ID: id, TenantID: owner, Public: public, Name: spec.name, PoolID: spec.poolID, FlavorID: spec.flavorID,
			ImageID: spec.imageID, SshKeys: spec.sshKeys, Env: sealed, EnvNames: envNames(env), Network: network,
			DefaultTimeoutS: seconds(spec.defaultTimeout), MaxTimeoutS: seconds(spec.maxTimeout), WarmCount: int32(spec.warmCount),
		})
		if err != nil {
			return fmt.Errorf("insert sandbox template: %w", err)
		}
		ev.TargetID = row.ID
		ev.Details = map[string]any{"name": row.Name, "public": row.Public, "warmCount": row.WarmCount}
		out = domain.SandboxTemplateFromRow(row)
		return events.WakePool(ctx, q, row.ID)
	})
	if err != nil {
		return domain.SandboxTemplate{}, err
	}
	return out, nil
}

// UpdateSandboxTemplate changes a template. A change to what a booted
// instance holds (flavor, image, keys, env, network) bumps its instance
// version, so its warm pool rolls over.
func (s *Service) UpdateSandboxTemplate(ctx context.Context, in SandboxTemplateUpdate) (domain.SandboxTemplate, error) {
	var out domain.SandboxTemplate
	err := s.mutate(ctx, ActUpdateSandboxTemplate, func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		cur, err := s.ownTemplate(ctx, q, ev, in.ID)
		if err != nil {
			return err
		}
		spec := templateSpec{
			name: cur.Name, poolID: cur.PoolID, flavorID: cur.FlavorID, imageID: cur.ImageID, sshKeys: cur.SshKeys,
			network: domain.ParseNetworkPolicy(cur.Network), defaultTimeout: time.Duration(cur.DefaultTimeoutS) * time.Second,
			maxTimeout: time.Duration(cur.MaxTimeoutS) * time.Second, warmCount: int(cur.WarmCount),
		}
		setIf(&spec.name, in.Name)
		setIf(&spec.flavorID, in.FlavorID)
		setIf(&spec.imageID, in.ImageID)
		setIf(&spec.sshKeys, in.SSHKeys)
		setIf(&spec.network, in.Network)
		setIf(&spec.defaultTimeout, in.DefaultTimeout)
		setIf(&spec.maxTimeout, in.MaxTimeout)
		setIf(&spec.warmCount, in.WarmCount)
		if err := spec.check(cur.TenantID != nil); err != nil {
			return err
		}
		env, err := s.openEnv(cur.Env, cur.ID)
		if err != nil {
			return err
		}
		envChanged := false
		if in.Env != nil {
			next, err := checkEnv("env", *in.Env)
			if err != nil {
				return err
			}
			envChanged = !maps.Equal(env, next)
			env = next
		}
		flavor, err := s.templateRefs(ctx, tx, q, cur.TenantID, cur.Public, spec)
		if err != nil {
			return err
		}
		if cur.TenantID != nil {
			if _, err := q.LockTenant(ctx, *cur.TenantID); err != nil {
				return notFound(err, "tenantId", "tenant")
			}
		}
		if spec.name != cur.Name {
			if err := s.templateNameFree(ctx, q, cur.TenantID, spec.name, cur.ID); err != nil {
				return err
			}
		}
		if spec.warmCount > int(cur.WarmCount) || spec.flavorID != cur.FlavorID {
			if err := s.checkWarmQuota(ctx, q, cur.TenantID, cur.ID, flavor, spec.warmCount); err != nil {
				return err
			}
		}
		booted := spec.flavorID != cur.FlavorID || spec.imageID != cur.ImageID || !slices.Equal(spec.sshKeys, cur.SshKeys) ||
			envChanged || !reflect.DeepEqual(spec.network, domain.ParseNetworkPolicy(cur.Network))
		version := cur.InstanceVersion
		if booted {
			version++
		}
		sealed, err := s.sealEnv(env, cur.ID)
		if err != nil {
			return err
		}
		network, err := json.Marshal(spec.network)
		if err != nil {
			return fmt.Errorf("encode network policy: %w", err)
		}
		row, err := q.UpdateSandboxTemplate(ctx, sqlc.UpdateSandboxTemplateParams{
			ID: cur.ID, Name: spec.name, FlavorID: spec.flavorID, ImageID: spec.imageID, SshKeys: spec.sshKeys,
			Env: sealed, EnvNames: envNames(env), Network: network, DefaultTimeoutS: seconds(spec.defaultTimeout),
			MaxTimeoutS: seconds(spec.maxTimeout), WarmCount: int32(spec.warmCount), InstanceVersion: version,
		})
		if err != nil {
			return fmt.Errorf("update sandbox template: %w", err)
		}
		ev.Details = map[string]any{"instanceVersion": row.InstanceVersion, "warmCount": row.WarmCount, "version": row.Version}
		out = domain.SandboxTemplateFromRow(row)
		return events.WakePool(ctx, q, row.ID)
	})
	if err != nil {
		return domain.SandboxTemplate{}, err
	}
	return out, nil
}

// DeleteSandboxTemplate deletes a template without live sandboxes, and
// asks for its free warm instances to be deleted.
func (s *Service) DeleteSandboxTemplate(ctx context.Context, id uuid.UUID) (domain.SandboxTemplate, error) {
	var out domain.SandboxTemplate
	err := s.mutate(ctx, ActDeleteSandboxTemplate, func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		cur, err := s.ownTemplate(ctx, q, ev, id)
		if err != nil {
			return err
		}
		live, err := q.LiveSandboxesOfTemplate(ctx, cur.ID)
		if err != nil {
			return fmt.Errorf("count the template's sandboxes: %w", err)
		}
		if live > 0 {
			return apierr.New(apierr.FailedPrecondition, "template %s has %d live sandboxes; delete them first", cur.Name, live)
		}
		row, err := q.SoftDeleteSandboxTemplate(ctx, cur.ID)
		if err != nil {
			return fmt.Errorf("delete sandbox template: %w", err)
		}
		warm, err := q.DeleteFreeWarmInstances(ctx, cur.ID)
		if err != nil {
			return fmt.Errorf("delete the template's warm instances: %w", err)
		}
		for _, inst := range warm {
			if err := events.Enqueue(ctx, q, vps.TopicInstances, events.Updated, inst); err != nil {
				return err
			}
		}
		ev.Details = map[string]any{"name": row.Name, "warmInstancesDeleted": len(warm)}
		out = domain.SandboxTemplateFromRow(row)
		return nil
	})
	if err != nil {
		return domain.SandboxTemplate{}, err
	}
	return out, nil
}

// ownTemplate locks a live template the caller may change: a member its
// tenant's own, an operator any. Another tenant's is NOT_FOUND; a public
// one a member sees but may not change.
func (s *Service) ownTemplate(ctx context.Context, q *sqlc.Queries, ev *audit.Event, id uuid.UUID) (sqlc.SandboxTemplate, error) {
	ev.TargetID = id
	p, err := caller(ctx)
	if err != nil {
		return sqlc.SandboxTemplate{}, err
	}
	cur, err := q.LockSandboxTemplate(ctx, id)
	if err != nil {
		return cur, notFound(err, "id", "sandbox template")
	}
	if !templateVisible(p, cur) {
		return sqlc.SandboxTemplate{}, apierr.NotFoundf("id", "sandbox template not found")
	}
	if cur.TenantID != nil {
		ev.TenantID = *cur.TenantID
	}
	if !p.IsOperator() && cur.Public {
		return sqlc.SandboxTemplate{}, apierr.New(apierr.Forbidden, "public templates are changed by operators only")
	}
	return cur, nil
}

// templateVisible says whether p sees t: its own tenant's, or public.
func templateVisible(p *iam.Principal, t sqlc.SandboxTemplate) bool {
	return t.Public || (t.TenantID != nil && p.CanSee(*t.TenantID))
}

// templateRefs checks what a template names, as its owner (nil: no tenant)
// sees it, and returns its flavor: a hosted pool (shared if the template
// is public), a flavor, and an image (public if the template is).
func (s *Service) templateRefs(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, owner *uuid.UUID, public bool, spec templateSpec) (sqlc.Flavor, error) {
	var none sqlc.Flavor
	pool, err := q.GetPool(ctx, spec.poolID)
	if err != nil {
		return none, notFound(err, "poolId", "pool")
	}
	if pool.TenantID != nil && (owner == nil || *pool.TenantID != *owner) {
		return none, apierr.NotFoundf("poolId", "pool not found")
	}
	if pool.Class != vps.ClassHosted {
		return none, apierr.Invalid("poolId", "pool %s is of class %q; sandboxes run in hosted pools (class %s) only", pool.Name, pool.Class, vps.ClassHosted)
	}
	if public && pool.TenantID != nil {
		return none, apierr.Invalid("poolId", "a public template needs a shared pool; %s is one tenant's", pool.Name)
	}
	flavor, err := q.GetFlavor(ctx, spec.flavorID)
	if err != nil {
		return none, notFound(err, "flavorId", "flavor")
	}
	img, err := s.images.Resolve(ctx, tx, imageTenant(owner, public), spec.imageID)
	if err != nil {
		return none, err
	}
	if img == nil {
		return none, apierr.NotFoundf("imageId", "image not found")
	}
	if pool.RequireVerifiedImage && !img.Verified {
		return none, apierr.Invalid("imageId", "pool %s requires a verified image", pool.Name)
	}
	return flavor, nil
}

// imageTenant is the tenant a template's image is resolved for: its owner,
// or none for a public template, whose image every tenant must see.
func imageTenant(owner *uuid.UUID, public bool) uuid.UUID {
	if public || owner == nil {
		return uuid.Nil
	}
	return *owner
}

// templateNameFree answers CONFLICT when owner has another live template
// named name.
func (s *Service) templateNameFree(ctx context.Context, q *sqlc.Queries, owner *uuid.UUID, name string, id uuid.UUID) error {
	taken, err := q.SandboxTemplateNameTaken(ctx, sqlc.SandboxTemplateNameTakenParams{Tenant: owner, Name: name, OtherThan: id})
	if err != nil {
		return fmt.Errorf("check template name: %w", err)
	}
	if taken {
		return &apierr.Error{Code: apierr.Conflict, Field: "name", Message: fmt.Sprintf("a sandbox template named %s exists", name)}
	}
	return nil
}

// checkWarmQuota refuses a warm count whose instances, with everything
// else the owner holds, would exceed the owner's quota.
func (s *Service) checkWarmQuota(ctx context.Context, q *sqlc.Queries, owner *uuid.UUID, template uuid.UUID, f sqlc.Flavor, n int) error {
	if owner == nil || n == 0 {
		return nil
	}
	quota, err := q.GetQuota(ctx, *owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read quota: %w", err)
	}
	usage, err := q.TenantUsageBesidesWarm(ctx, sqlc.TenantUsageBesidesWarmParams{TenantID: *owner, TemplateID: template})
	if err != nil {
		return fmt.Errorf("count usage: %w", err)
	}
	if err := checkQuota(quota, sqlc.TenantUsageRow(usage), f, int64(n)); err != nil {
		var aerr *apierr.Error
		if errors.As(err, &aerr) {
			aerr.Field = "warmCount"
			aerr.Message = fmt.Sprintf("%d warm instances would exceed the owner's quota: %s", n, aerr.Message)
		}
		return err
	}
	return nil
}

// SandboxTemplate returns a live template the caller may see.
func (s *Service) SandboxTemplate(ctx context.Context, id uuid.UUID) (domain.SandboxTemplate, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.SandboxTemplate{}, err
	}
	t, err := s.q.GetSandboxTemplate(ctx, id)
	if err != nil {
		return domain.SandboxTemplate{}, notFound(err, "id", "sandbox template")
	}
	if !templateVisible(p, t) {
		return domain.SandboxTemplate{}, apierr.NotFoundf("id", "sandbox template not found")
	}
	return domain.SandboxTemplateFromRow(t), nil
}

// SandboxTemplates lists the live templates the caller may see, its
// tenant's and the public ones, newest first.
func (s *Service) SandboxTemplates(ctx context.Context, page Page[uuid.UUID]) ([]domain.SandboxTemplate, PageInfo, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, PageInfo{}, err
	}
	params := sqlc.ListSandboxTemplatesParams{Tenant: p.TenantFilter()}
	rows, info, err := keyset(ctx, page, func(ctx context.Context, asc bool, lo, hi *uuid.UUID, lim int32) (rows []sqlc.SandboxTemplate, err error) {
		params.Lo, params.Hi, params.Lim = lo, hi, lim
		if asc {
			rows, err = s.q.ListSandboxTemplatesAsc(ctx, sqlc.ListSandboxTemplatesAscParams(params))
		} else {
			rows, err = s.q.ListSandboxTemplates(ctx, params)
		}
		if err != nil {
			return nil, fmt.Errorf("list sandbox templates: %w", err)
		}
		return rows, nil
	})
	if err != nil {
		return nil, PageInfo{}, err
	}
	return mapRows(rows, domain.SandboxTemplateFromRow), info, nil
}

// CountSandboxTemplates counts what SandboxTemplates pages through.
func (s *Service) CountSandboxTemplates(ctx context.Context) (int, error) {
	p, err := caller(ctx)
	if err != nil {
		return 0, err
	}
	n, err := s.q.CountSandboxTemplates(ctx, p.TenantFilter())
	if err != nil {
		return 0, fmt.Errorf("count sandbox templates: %w", err)
	}
	return int(n), nil
}

// SandboxTemplatesByID loads templates, deleted ones included, for
// objects already authorized (a sandbox's template).
func (s *Service) SandboxTemplatesByID(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.SandboxTemplate, error) {
	return byID(ctx, "sandbox templates", keys, s.q.GetSandboxTemplatesByIDs, func(t sqlc.SandboxTemplate) uuid.UUID { return t.ID }, domain.SandboxTemplateFromRow)
}

// sealEnv seals env, bound to id (a template's or an instance's); none
// is stored as NULL.
func (s *Service) sealEnv(env map[string]string, id uuid.UUID) ([]byte, error) {
	if len(env) == 0 {
		return nil, nil
	}
	if s.sealer == nil {
		return nil, errors.New("no sealer configured for env")
	}
	plain, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode env: %w", err)
	}
	return s.sealer.Seal(plain, id[:]), nil
}

// openEnv opens what sealEnv sealed for id.
func (s *Service) openEnv(sealed []byte, id uuid.UUID) (map[string]string, error) {
	env := map[string]string{}
	if sealed == nil {
		return env, nil
	}
	if s.sealer == nil {
		return nil, errors.New("no sealer configured for env")
	}
	plain, err := s.sealer.Open(sealed, id[:])
	if err != nil {
		return nil, fmt.Errorf("open the env of %s: %w", id, err)
	}
	if err := json.Unmarshal(plain, &env); err != nil {
		return nil, fmt.Errorf("decode the env of %s: %w", id, err)
	}
	return env, nil
}

// envNames lists env's names, sorted.
func envNames(env map[string]string) []string {
	return append([]string{}, slices.Sorted(maps.Keys(env))...)
}

func seconds(d time.Duration) int32 { return int32(d / time.Second) }

// setIf sets *dst to *v when v is given.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
