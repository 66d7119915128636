package control

import (
	"context"
	"encoding/json"
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

// CreateSandboxInput asks for a sandbox.
type CreateSandboxInput struct {
	// TenantID owns the sandbox. Members may leave it zero (their own
	// tenant); operators must name it.
	TenantID uuid.UUID
	// TemplateID is the template it is made from; with FromSnapshot it
	// may be left zero (the snapshot's template) or must name the same.
	TemplateID uuid.UUID
	// FromSnapshot, when set, restores the sandbox from a READY snapshot
	// of the tenant's: it boots cold (no warm pool) from the snapshot's
	// disk, on the host that holds it.
	FromSnapshot *uuid.UUID
	// Timeout is how long it lives from now; zero takes the template's
	// default. It may not exceed the template's maximum.
	Timeout  time.Duration
	Metadata map[string]string
	// SSHKeys and Env are the sandbox's own, beyond its template's. A warm
	// instance booted before anyone claimed it cannot hold them, so a
	// sandbox asking for either boots cold.
	SSHKeys []string
	Env     []EnvVar
	// IdempotencyKey, when set, makes a repeated create by the same tenant
	// return the first sandbox.
	IdempotencyKey string
}

// CreateSandbox makes a sandbox from a template. In the same transaction it
// claims a free warm instance of the template's current version, which is
// asked to resume (startedFrom WARM), or, with none free, makes an
// instance of its own (COLD). Either counts against the sandbox's
// tenant's quota.
func (s *Service) CreateSandbox(ctx context.Context, in CreateSandboxInput) (domain.Sandbox, error) {
	var out domain.Sandbox
	err := s.mutate(ctx, ActCreateSandbox, func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		p, err := caller(ctx)
		if err != nil {
			return err
		}
		tenant := in.TenantID
		switch {
		case p.IsOperator() && tenant == uuid.Nil:
			return apierr.Invalid("tenantId", "operators must name the tenant")
		case !p.IsOperator() && tenant == uuid.Nil:
			tenant = p.TenantID
		case !p.CanSee(tenant):
			return apierr.NotFoundf("tenantId", "tenant not found")
		}
		if err := checkMetadata(in.Metadata); err != nil {
			return err
		}
		var keys []string
		if len(in.SSHKeys) > 0 {
			if keys, err = parseSSHKeys(in.SSHKeys); err != nil {
				return err
			}
		}
		env, err := checkEnv("env", in.Env)
		if err != nil {
			return err
		}
		if in.Timeout != 0 {
			if err := checkTimeout("timeout", in.Timeout, MaxSandboxTimeout); err != nil {
				return err
			}
		}
		if len(in.IdempotencyKey) > 255 {
			return apierr.Invalid("idempotencyKey", "at most 255 characters")
		}
		if ok, err := s.replaySandbox(ctx, q, ev, tenant, in.IdempotencyKey, &out); ok || err != nil {
			return err
		}
		template, err := sandboxTemplateOf(ctx, q, in, tenant)
		if err != nil {
			return err
		}

		t, err := q.GetSandboxTemplate(ctx, template)
		if err != nil {
			return notFound(err, "templateId", "sandbox template")
		}
		if !t.Public && (t.TenantID == nil || *t.TenantID != tenant) {
			return apierr.NotFoundf("templateId", "sandbox template not found")
		}
		timeout := in.Timeout
		if timeout == 0 {
			timeout = time.Duration(t.DefaultTimeoutS) * time.Second
		}
		if err := checkTimeout("timeout", timeout, time.Duration(t.MaxTimeoutS)*time.Second); err != nil {
			return err
		}
		pool, err := q.GetPool(ctx, t.PoolID)
		if err != nil {
			return fmt.Errorf("read the template's pool: %w", err)
		}
		if pool.Class != vps.ClassHosted {
			return apierr.Invalid("templateId", "template %s is in pool %s of class %q; sandboxes run in hosted pools only", t.Name, pool.Name, pool.Class)
		}
		metadata, err := json.Marshal(orEmpty(in.Metadata))
		if err != nil {
			return fmt.Errorf("encode metadata: %w", err)
		}

		// As createInstance: quota and idempotency keys serialize on the
		// tenant's lock. A claim never waits on another: SKIP LOCKED.
		if _, err := q.LockTenant(ctx, tenant); err != nil {
			return notFound(err, "tenantId", "tenant")
		}
		ev.TenantID = tenant
		if ok, err := s.replaySandbox(ctx, q, ev, tenant, in.IdempotencyKey, &out); ok || err != nil {
			return err
		}
		flavor, err := q.GetFlavor(ctx, t.FlavorID)
		if err != nil {
			return fmt.Errorf("read the template's flavor: %w", err)
		}
		if in.FromSnapshot != nil {
			// Locked now, after the tenant, so it is not deleted under
			// the restore.
			snap, err := restoreSource(ctx, q, tenant, *in.FromSnapshot, true)
			if err != nil {
				return err
			}
			if flavor, err = restoreFlavor(ctx, q, snap); err != nil {
				return err
			}
		}
		if err := s.checkQuota(ctx, q, tenant, flavor); err != nil {
			return err
		}

		id := ids.New()
		started, inst, err := s.sandboxInstance(ctx, tx, q, t, fromTemplate{
			tenant: tenant, desired: lifecycle.WantRunning, sandbox: id, extraKeys: keys, extraEnv: env,
			restoreFrom: in.FromSnapshot, flavor: flavor,
		})
		if err != nil {
			return err
		}
		var idem *string
		if in.IdempotencyKey != "" {
			idem = &in.IdempotencyKey
		}
		if _, err := q.InsertSandbox(ctx, sqlc.InsertSandboxParams{
			ID: id, TenantID: tenant, TemplateID: t.ID, TemplateVersion: t.InstanceVersion, StartedFrom: started,
			Metadata: metadata, TimeoutS: seconds(timeout), IdempotencyKey: idem, FromSnapshot: in.FromSnapshot,
		}); err != nil {
			return fmt.Errorf("insert sandbox: %w", err)
		}
		if err := events.RecordSandbox(ctx, q, id, events.Created, ""); err != nil {
			return err
		}
		// A claimed warm instance may run already: the sandbox starts now.
		if err := events.SandboxStep(ctx, q, inst); err != nil {
			return err
		}
		ev.TargetID = id
		ev.Details = map[string]any{"templateId": ids.Encode(ids.SandboxTemplate, t.ID), "startedFrom": started,
			"instanceId": ids.Encode(ids.Instance, inst.ID), "timeoutSeconds": seconds(timeout)}
		if in.FromSnapshot != nil {
			ev.Details["fromSnapshot"] = ids.Encode(ids.SandboxSnapshot, *in.FromSnapshot)
		}
		return s.readSandbox(ctx, q, id, &out)
	})
	if err != nil {
		return domain.Sandbox{}, err
	}
	return out, nil
}

// sandboxTemplateOf returns the template a sandbox is made from: the one
// named, or its snapshot's.
func sandboxTemplateOf(ctx context.Context, q *sqlc.Queries, in CreateSandboxInput, tenant uuid.UUID) (uuid.UUID, error) {
	if in.FromSnapshot == nil {
		if in.TemplateID == uuid.Nil {
			return uuid.Nil, apierr.Invalid("templateId", "name the template or the snapshot (fromSnapshot) to make the sandbox from")
		}
		return in.TemplateID, nil
	}
	snap, err := restoreSource(ctx, q, tenant, *in.FromSnapshot, false)
	if err != nil {
		return uuid.Nil, err
	}
	if in.TemplateID != uuid.Nil && in.TemplateID != snap.TemplateID {
		return uuid.Nil, apierr.Invalid("templateId", "snapshot %s was taken of template %s; leave templateId out or name that one",
			snap.Name, ids.Encode(ids.SandboxTemplate, snap.TemplateID))
	}
	if _, err := q.GetSandboxTemplate(ctx, snap.TemplateID); errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, &apierr.Error{Code: apierr.FailedPrecondition, Field: "fromSnapshot",
			Message: fmt.Sprintf("the template snapshot %s was taken of is deleted", snap.Name)}
	}
	return snap.TemplateID, nil
}

// sandboxInstance gives sandbox o.sandbox its instance: a claimed warm one
// when it asks for nothing beyond its template, else a cold one as o says,
// which a restore's always is (restoring from snapshot).
func (s *Service) sandboxInstance(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, t sqlc.SandboxTemplate, o fromTemplate) (string, sqlc.Instance, error) {
	if len(o.extraKeys) == 0 && len(o.extraEnv) == 0 && o.restoreFrom == nil {
		claim := sqlc.ClaimWarmInstanceParams{SandboxID: o.sandbox, TenantID: o.tenant, TemplateID: t.ID, TemplateVersion: t.InstanceVersion}
		inst, err := q.ClaimWarmInstance(ctx, claim)
		if errors.Is(err, pgx.ErrNoRows) {
			inst, err = q.ClaimWarmInstanceBehindStep(ctx, sqlc.ClaimWarmInstanceBehindStepParams(claim))
		}
		switch {
		case err == nil:
			if err := events.Enqueue(ctx, q, vps.TopicInstances, events.Updated, inst); err != nil {
				return "", inst, err
			}
			return domain.StartedWarm, inst, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return "", inst, fmt.Errorf("claim a warm instance: %w", err)
		}
	}
	inst, err := s.insertFromTemplate(ctx, tx, q, t, o)
	return domain.StartedCold, inst, err
}

// replaySandbox sets *out to the sandbox a tenant created before with key,
// if any, and reports whether there was one.
func (s *Service) replaySandbox(ctx context.Context, q *sqlc.Queries, ev *audit.Event, tenant uuid.UUID, key string, out *domain.Sandbox) (bool, error) {
	if key == "" {
		return false, nil
	}
	prev, err := q.GetSandboxByIdempotencyKey(ctx, sqlc.GetSandboxByIdempotencyKeyParams{TenantID: tenant, IdempotencyKey: &key})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up idempotency key: %w", err)
	}
	ev.TenantID, ev.TargetID = tenant, prev.ID
	ev.Details = map[string]any{"idempotentReplay": true}
	*out, err = sandboxAnswer(ctx, q, prev)
	return true, err
}

// SetSandboxTimeout sets a live sandbox's deadline to timeout from now,
// extending or shortening it, up to its template's maximum.
func (s *Service) SetSandboxTimeout(ctx context.Context, id uuid.UUID, timeout time.Duration) (domain.Sandbox, error) {
	return s.changeSandbox(ctx, ActSetSandboxTimeout, id, func(ctx context.Context, q *sqlc.Queries, ev *audit.Event, sbx sqlc.SandboxView, _ sqlc.Instance) error {
		if err := checkTimeout("timeout", timeout, MaxSandboxTimeout); err != nil {
			return err
		}
		if sbx.EndedAs != nil {
			return apierr.New(apierr.FailedPrecondition, "sandbox is %s", *sbx.EndedAs)
		}
		t, err := q.GetSandboxTemplatesByIDs(ctx, []uuid.UUID{sbx.TemplateID})
		if err != nil || len(t) == 0 {
			return fmt.Errorf("read the sandbox's template: %w", err)
		}
		if err := checkTimeout("timeout", timeout, time.Duration(t[0].MaxTimeoutS)*time.Second); err != nil {
			return err
		}
		if err := q.SetSandboxExpiry(ctx, sqlc.SetSandboxExpiryParams{ID: sbx.ID, TimeoutS: seconds(timeout)}); err != nil {
			return fmt.Errorf("set the sandbox's deadline: %w", err)
		}
		ev.Details = map[string]any{"timeoutSeconds": seconds(timeout), "was": sbx.ExpiresAt}
		return events.RecordSandbox(ctx, q, sbx.ID, events.TimeoutChanged, "")
	})
}

// PauseSandbox asks a live sandbox's instance to pause. It keeps its
// allocation, and its timeout clock runs on: a paused sandbox expires at
// its deadline like a running one.
func (s *Service) PauseSandbox(ctx context.Context, id uuid.UUID) (domain.Sandbox, error) {
	return s.setSandboxPower(ctx, ActPauseSandbox, id, lifecycle.WantPaused)
}

// ResumeSandbox asks a paused sandbox's instance to run again.
func (s *Service) ResumeSandbox(ctx context.Context, id uuid.UUID) (domain.Sandbox, error) {
	return s.setSandboxPower(ctx, ActResumeSandbox, id, lifecycle.WantRunning)
}

func (s *Service) setSandboxPower(ctx context.Context, action Action, id uuid.UUID, want lifecycle.Desired) (domain.Sandbox, error) {
	return s.changeSandbox(ctx, action, id, func(ctx context.Context, q *sqlc.Queries, ev *audit.Event, sbx sqlc.SandboxView, inst sqlc.Instance) error {
		switch {
		case sbx.EndedAs != nil:
			return apierr.New(apierr.FailedPrecondition, "sandbox is %s", *sbx.EndedAs)
		case inst.DesiredState == string(want):
			ev.Details = map[string]any{"unchanged": true}
			return nil
		case inst.DesiredState != string(lifecycle.WantRunning) && inst.DesiredState != string(lifecycle.WantPaused):
			return apierr.New(apierr.FailedPrecondition, "the sandbox's instance is %s", inst.DesiredState)
		}
		return setSandboxInstance(ctx, q, ev, sbx.ID, inst, want)
	})
}

// DeleteSandbox ends a sandbox and asks for its instance to be deleted.
// Deleting an ended sandbox changes nothing.
func (s *Service) DeleteSandbox(ctx context.Context, id uuid.UUID) (domain.Sandbox, error) {
	return s.changeSandbox(ctx, ActDeleteSandbox, id, func(ctx context.Context, q *sqlc.Queries, ev *audit.Event, sbx sqlc.SandboxView, inst sqlc.Instance) error {
		if sbx.EndedAs != nil {
			ev.Details = map[string]any{"unchanged": true}
			return nil
		}
		return endSandbox(ctx, q, ev, sbx.ID, inst, "")
	})
}

// endSandbox ends a live sandbox as DELETED, asks for its locked instance
// to be deleted and records the step, with reason.
func endSandbox(ctx context.Context, q *sqlc.Queries, ev *audit.Event, id uuid.UUID, inst sqlc.Instance, reason string) error {
	if _, err := q.EndSandbox(ctx, sqlc.EndSandboxParams{ID: id, EndedAs: domain.SandboxDeleted}); err != nil {
		return fmt.Errorf("end sandbox: %w", err)
	}
	if inst.DesiredState != string(lifecycle.WantDeleted) {
		if err := setSandboxInstance(ctx, q, ev, id, inst, lifecycle.WantDeleted); err != nil {
			return err
		}
	}
	return events.RecordSandbox(ctx, q, id, events.Deleted, reason)
}

// setSandboxInstance sets the desired state of a sandbox's locked instance
// and writes its event, which wakes the reconciler.
func setSandboxInstance(ctx context.Context, q *sqlc.Queries, ev *audit.Event, sbx uuid.UUID, inst sqlc.Instance, want lifecycle.Desired) error {
	next, err := q.SetDesiredState(ctx, sqlc.SetDesiredStateParams{ID: inst.ID, DesiredState: string(want), Version: inst.Version})
	if err != nil {
		return fmt.Errorf("set the sandbox's instance to %s: %w", want, err)
	}
	if err := q.TouchSandbox(ctx, sbx); err != nil {
		return fmt.Errorf("record the sandbox's change: %w", err)
	}
	ev.Details = map[string]any{"from": inst.DesiredState, "to": next.DesiredState, "instanceVersion": next.Version}
	return events.Enqueue(ctx, q, vps.TopicInstances, events.Updated, next)
}

// sandboxChange is the body of a mutation of one sandbox, given it and its
// instance, both locked.
type sandboxChange func(ctx context.Context, q *sqlc.Queries, ev *audit.Event, sbx sqlc.SandboxView, inst sqlc.Instance) error

// changeSandbox runs fn on a sandbox the caller may see, locked with its
// instance, in one audited transaction, and returns the sandbox as fn
// left it.
func (s *Service) changeSandbox(ctx context.Context, action Action, id uuid.UUID, fn sandboxChange) (domain.Sandbox, error) {
	var out domain.Sandbox
	err := s.mutate(ctx, action, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		p, err := caller(ctx)
		if err != nil {
			return err
		}
		if _, err := q.LockSandbox(ctx, id); err != nil {
			return notFound(err, "id", "sandbox")
		}
		sbx, err := q.GetSandbox(ctx, id)
		if err != nil {
			return notFound(err, "id", "sandbox")
		}
		if !p.CanSee(sbx.TenantID) {
			return apierr.NotFoundf("id", "sandbox not found")
		}
		ev.TenantID = sbx.TenantID
		inst, err := q.LockSandboxInstance(ctx, &id)
		if err != nil {
			return fmt.Errorf("lock the sandbox's instance: %w", err)
		}
		if err := fn(ctx, q, ev, sbx, inst); err != nil {
			return err
		}
		return s.readSandbox(ctx, q, id, &out)
	})
	if err != nil {
		return domain.Sandbox{}, err
	}
	return out, nil
}

// readSandbox reads a sandbox through q into out: a mutation's answer is
// read in its transaction.
func (s *Service) readSandbox(ctx context.Context, q *sqlc.Queries, id uuid.UUID, out *domain.Sandbox) error {
	row, err := q.GetSandbox(ctx, id)
	if err != nil {
		return fmt.Errorf("read sandbox: %w", err)
	}
	*out, err = sandboxAnswer(ctx, q, row)
	return err
}

// sandboxAnswer is a mutation's answer: the sandbox of row with its
// instance, both read in the mutation's transaction, so a database that
// goes away after the commit cannot turn a done mutation into an error.
func sandboxAnswer(ctx context.Context, q *sqlc.Queries, row sqlc.SandboxView) (domain.Sandbox, error) {
	sbx := domain.SandboxFromRow(row)
	inst, err := q.GetInstance(ctx, sbx.InstanceID)
	if err != nil {
		return domain.Sandbox{}, fmt.Errorf("read the sandbox's instance: %w", err)
	}
	answer, err := withAddresses(ctx, q, inst)
	if err != nil {
		return domain.Sandbox{}, err
	}
	sbx.Instance = &answer
	return sbx, nil
}

// Sandbox returns a sandbox the caller may see.
func (s *Service) Sandbox(ctx context.Context, id uuid.UUID) (domain.Sandbox, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.Sandbox{}, err
	}
	row, err := s.q.GetSandbox(ctx, id)
	if err != nil {
		return domain.Sandbox{}, notFound(err, "id", "sandbox")
	}
	if !p.CanSee(row.TenantID) {
		return domain.Sandbox{}, apierr.NotFoundf("id", "sandbox not found")
	}
	return domain.SandboxFromRow(row), nil
}

// SandboxFilter narrows a list of sandboxes; zero fields do not filter.
type SandboxFilter struct {
	TemplateID *uuid.UUID
	// State is one of the domain.Sandbox… states.
	State *string
	// Metadata keeps sandboxes having every one of these pairs.
	Metadata map[string]string
}

// params returns the filter's query arguments.
func (f SandboxFilter) params() (template *uuid.UUID, state *string, metadata []byte, err error) {
	if f.Metadata != nil {
		if metadata, err = json.Marshal(f.Metadata); err != nil {
			return nil, nil, nil, fmt.Errorf("encode metadata filter: %w", err)
		}
	}
	return f.TemplateID, f.State, metadata, nil
}

// Sandboxes lists the sandboxes the caller may see, newest first.
func (s *Service) Sandboxes(ctx context.Context, f SandboxFilter, page Page[uuid.UUID]) ([]domain.Sandbox, PageInfo, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, PageInfo{}, err
	}
	template, state, metadata, err := f.params()
	if err != nil {
		return nil, PageInfo{}, err
	}
	params := sqlc.ListSandboxesParams{Tenant: p.TenantFilter(), Template: template, State: state, Metadata: metadata}
	rows, info, err := keyset(ctx, page, func(ctx context.Context, asc bool, lo, hi *uuid.UUID, lim int32) (rows []sqlc.SandboxView, err error) {
		params.Lo, params.Hi, params.Lim = lo, hi, lim
		if asc {
			rows, err = s.q.ListSandboxesAsc(ctx, sqlc.ListSandboxesAscParams(params))
		} else {
			rows, err = s.q.ListSandboxes(ctx, params)
		}
		if err != nil {
			return nil, fmt.Errorf("list sandboxes: %w", err)
		}
		return rows, nil
	})
	if err != nil {
		return nil, PageInfo{}, err
	}
	return mapRows(rows, domain.SandboxFromRow), info, nil
}

// CountSandboxes counts what Sandboxes with f pages through.
func (s *Service) CountSandboxes(ctx context.Context, f SandboxFilter) (int, error) {
	p, err := caller(ctx)
	if err != nil {
		return 0, err
	}
	template, state, metadata, err := f.params()
	if err != nil {
		return 0, err
	}
	n, err := s.q.CountSandboxes(ctx, sqlc.CountSandboxesParams{Tenant: p.TenantFilter(), Template: template, State: state, Metadata: metadata})
	if err != nil {
		return 0, fmt.Errorf("count sandboxes: %w", err)
	}
	return int(n), nil
}

// orEmpty is m, or an empty map for nil, so it encodes as {}.
func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
