package reconciler

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// The audit action of an expiry, which no API caller makes: its row has no
// principal and the request ID of the loop.
const (
	actionExpireSandbox = "sandbox.expire"
	expiryRequestID     = "vps.sandboxes"
)

// expiryBatch bounds the sandboxes one query lists for expiry.
const expiryBatch = 500

// sandboxSweep is the vps.sandboxes loop, run once per SandboxInterval
// across all reconcilers: it expires the sandboxes past their deadline,
// fails the host commands past theirs, settles the snapshots whose
// commands ended unnoticed and queues the commands snapshots still want,
// and hands every warm pool that wants looking at to the vps.sandboxes
// kind.
func (r *Reconciler) sandboxSweep(ctx context.Context) error {
	if err := r.expire(ctx); err != nil {
		return err
	}
	if err := r.failOverdueCommands(ctx); err != nil {
		return err
	}
	if err := r.settleSnapshots(ctx); err != nil {
		return err
	}
	if err := r.stream.ensureGroup(ctx); err != nil {
		return err
	}
	templates, err := sqlc.New(r.db).TemplatesForUpkeep(ctx)
	if err != nil {
		return fmt.Errorf("list warm pools: %w", err)
	}
	keys := make([]string, len(templates))
	for i, id := range templates {
		keys[i] = id.String()
	}
	return r.stream.add(ctx, vps.TopicSandboxes, keys...)
}

// expire ends every sandbox past its deadline.
func (r *Reconciler) expire(ctx context.Context) error {
	for {
		due, err := sqlc.New(r.db).ExpiredSandboxes(ctx, expiryBatch)
		if err != nil {
			return fmt.Errorf("list expired sandboxes: %w", err)
		}
		for _, id := range due {
			if err := r.expireSandbox(ctx, id); err != nil {
				return err
			}
		}
		if len(due) < expiryBatch {
			return nil
		}
	}
}

// expireSandbox ends a sandbox as EXPIRED, if it still is past its
// deadline, and asks for its instance to be deleted, with the instance's
// event, the sandbox's EXPIRED event and an audit row, in one transaction. It locks the sandbox, then
// its instance, as the API's sandbox mutations do.
func (r *Reconciler) expireSandbox(ctx context.Context, id uuid.UUID) error {
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		sbx, err := q.ExpireSandbox(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // extended, deleted or expired meanwhile
		}
		if err != nil {
			return fmt.Errorf("end sandbox: %w", err)
		}
		inst, err := q.LockSandboxInstance(ctx, &id)
		if err != nil {
			return fmt.Errorf("lock its instance: %w", err)
		}
		details := map[string]any{"expiresAt": sbx.ExpiresAt, "instanceId": ids.Encode(ids.Instance, inst.ID)}
		if inst.DesiredState != string(lifecycle.WantDeleted) {
			next, err := q.SetDesiredState(ctx, sqlc.SetDesiredStateParams{ID: inst.ID, DesiredState: string(lifecycle.WantDeleted), Version: inst.Version})
			if err != nil {
				return fmt.Errorf("ask for its instance to be deleted: %w", err)
			}
			if err := events.Enqueue(ctx, q, vps.TopicInstances, events.Updated, next); err != nil {
				return err
			}
			details["from"] = inst.DesiredState
		}
		if err := events.RecordSandbox(ctx, q, id, events.Expired, "its timeout passed"); err != nil {
			return err
		}
		return audit.Write(ctx, q, audit.Event{TenantID: sbx.TenantID, Action: actionExpireSandbox, TargetType: "sandbox",
			TargetID: id, RequestID: expiryRequestID, Details: details})
	})
	if err != nil {
		return fmt.Errorf("expire sandbox %s: %w", ids.Log(ids.Sandbox, id), err)
	}
	return nil
}
