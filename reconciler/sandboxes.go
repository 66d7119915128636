package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// WarmPools adds instances to sandbox templates' warm pools; the API's
// control.Service does, so a warm instance is made, sealed and counted
// against its owner's quota exactly as createSandbox makes a cold one.
type WarmPools interface {
	// AddWarmInstance adds one instance of the template's current
	// version, asked to boot and then pause; an *apierr.Error with
	// QUOTA_EXCEEDED when the owner's quota holds no more.
	AddWarmInstance(ctx context.Context, template uuid.UUID) (domain.Instance, error)
}

// upkeepLockSpace is the advisory lock space (the first key) of warm-pool
// upkeeps; the second key is a hash of the template's ID.
const upkeepLockSpace = 0x5b7

// upkeepBusyRetry is how soon an upkeep another reconciler is doing is
// looked at again, in case that one read the pool before what woke this.
const upkeepBusyRetry = 50 * time.Millisecond

// sandboxes is the vps.sandboxes kind: the upkeep of one template's warm
// pool (a key is a template's ID). It is woken by every step of a warm
// instance (a claim among them) and, for every pool, each SandboxInterval.
type sandboxes struct{ r *Reconciler }

// Reconcile keeps the warm pool of the template req names. One reconciler
// at a time keeps a pool, under a transaction-level advisory lock: two
// filling it at once would both count its deficit and overfill it.
func (k *sandboxes) Reconcile(ctx context.Context, req Request) (Result, error) {
	id, err := uuid.Parse(req.Key)
	if err != nil {
		return Result{}, Terminal(fmt.Errorf("template id %q: %w", req.Key, err))
	}
	busy := false
	err = pgx.BeginFunc(ctx, k.r.db, func(tx pgx.Tx) error {
		got, err := sqlc.New(tx).TryUpkeepLock(ctx, sqlc.TryUpkeepLockParams{Space: upkeepLockSpace, TemplateKey: id.String()})
		if err != nil {
			return fmt.Errorf("take the upkeep lock: %w", err)
		}
		if !got {
			busy = true
			return nil
		}
		// The lock's transaction holds no row lock: the upkeep's own
		// transactions (and control's) take theirs.
		return k.r.keepPool(ctx, id)
	})
	if err != nil {
		return Result{}, fmt.Errorf("keep the warm pool of template %s: %w", ids.Log(ids.SandboxTemplate, id), err)
	}
	if busy {
		return Result{RequeueAfter: upkeepBusyRetry}, nil
	}
	return Result{}, nil
}

// keepPool retires what the pool's plan says, then fills it.
func (r *Reconciler) keepPool(ctx context.Context, template uuid.UUID) error {
	q := sqlc.New(r.db)
	t, err := q.TemplateForUpkeep(ctx, template)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read template: %w", err)
	}
	rows, err := q.FreeWarmInstances(ctx, template)
	if err != nil {
		return fmt.Errorf("list free warm instances: %w", err)
	}
	p := warmPool{version: t.InstanceVersion, now: time.Now(), stuckAfter: r.cfg.SandboxInterval}
	if t.DeletedAt == nil {
		p.want = int(t.WarmCount)
	}
	for _, row := range rows {
		p.free = append(p.free, warmInstance{id: row.ID, version: *row.WarmTemplateVersion, state: lifecycle.State(row.State), created: row.CreatedAt})
	}
	u := planPool(p)
	if err := r.retireWarm(ctx, u.retire); err != nil {
		return err
	}
	refused, err := r.fillPool(ctx, template, u.add)
	if err != nil {
		return err
	}
	if refused && u.spare != uuid.Nil {
		return r.retireWarm(ctx, []uuid.UUID{u.spare})
	}
	return nil
}

// retireWarm asks for free warm instances to be deleted, with their
// events; one a sandbox claimed meanwhile stays.
func (r *Reconciler) retireWarm(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		retired, err := q.RetireWarmInstances(ctx, ids)
		if err != nil {
			return fmt.Errorf("retire warm instances: %w", err)
		}
		for _, inst := range retired {
			if err := events.Enqueue(ctx, q, vps.TopicInstances, events.Updated, inst); err != nil {
				return err
			}
		}
		return nil
	})
}

// fillPool adds n warm instances to the template's pool, and reports
// whether the owner's quota refused one. Without WarmPools, pools are
// trimmed and rolled over but not filled.
func (r *Reconciler) fillPool(ctx context.Context, template uuid.UUID, n int) (refused bool, err error) {
	if n <= 0 || r.cfg.Warm == nil {
		return false, nil
	}
	for range n {
		_, err := r.cfg.Warm.AddWarmInstance(ctx, template)
		var ae *apierr.Error
		switch {
		case err == nil:
		case errors.As(err, &ae) && ae.Code == apierr.QuotaExceeded:
			r.log.DebugContext(ctx, "warm pool short: its owner's quota holds no more", "template", ids.Log(ids.SandboxTemplate, template), "err", err)
			return true, nil
		case errors.As(err, &ae):
			// The template went, or its image: retrying will not mend it,
			// and the next interval looks again.
			r.log.InfoContext(ctx, "warm pool not filled", "template", ids.Log(ids.SandboxTemplate, template), "err", err)
			return false, nil
		default:
			return false, fmt.Errorf("add a warm instance: %w", err)
		}
	}
	return false, nil
}

// wakeUpkeep asks for the upkeep of a warm instance's template, in the
// transaction of q: a step of a warm instance (claimed, paused, deleted)
// may change what its pool needs.
func wakeUpkeep(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance) error {
	if inst.WarmTemplateID == nil {
		return nil
	}
	return events.WakePool(ctx, q, *inst.WarmTemplateID)
}
