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
	"github.com/better-compute/vps/sqlc"
)

// The audit action of a lapse, which no API caller makes: its row has no
// principal and the request ID of the pass.
const (
	ActionCertificateLapsed = "instance.host_certificate_lapsed"
	lapseRequestID          = "vps.certificate-lapses"
)

// lapseBatch bounds the instances one query lists.
const lapseBatch = 500

// lapseCertifications is the vps.certificate-lapses pass, run once per
// LapseInterval across all reconcilers: an instance recorded as on a
// certified host whose certificate has since expired (its host stopped
// renewing, or stopped reporting) is marked not certified, with an audit
// row and its live event, so a lapse is reported rather than kept quiet.
func (r *Reconciler) lapseCertifications(ctx context.Context) error {
	for {
		due, err := sqlc.New(r.db).LapsedCertifications(ctx, lapseBatch)
		if err != nil {
			return fmt.Errorf("list lapsed certifications: %w", err)
		}
		for _, id := range due {
			if err := r.lapse(ctx, id); err != nil {
				return err
			}
		}
		if len(due) < lapseBatch {
			return nil
		}
	}
}

// lapse marks one instance's host not certified, if its certificate still
// has lapsed (a report may have renewed it meanwhile), in one transaction
// with its event and audit row.
func (r *Reconciler) lapse(ctx context.Context, id uuid.UUID) error {
	var lapsed *sqlc.Instance
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		was, err := q.LockInstance(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock instance: %w", err)
		}
		inst, err := q.LapseCertification(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // renewed or deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("mark not certified: %w", err)
		}
		if err := events.Enqueue(ctx, q, TopicEvents, events.Updated, inst); err != nil {
			return err
		}
		lapsed = &was
		details := map[string]any{"validBefore": was.HostCertValidBefore}
		if inst.HostID != nil {
			details["hostId"] = ids.Encode(ids.Host, *inst.HostID)
		}
		return audit.Write(ctx, q, audit.Event{TenantID: inst.TenantID, Action: ActionCertificateLapsed, TargetType: "instance",
			TargetID: inst.ID, RequestID: lapseRequestID, Details: details})
	})
	if err != nil {
		return fmt.Errorf("lapse the certification of instance %s: %w", ids.Log(ids.Instance, id), err)
	}
	if lapsed != nil {
		r.log.InfoContext(ctx, "host certificate lapsed", "instance", ids.Log(ids.Instance, id), "valid_before", lapsed.HostCertValidBefore)
	}
	return nil
}
