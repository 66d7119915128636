package reconciler

import (
	"context"
	"errors"
	"fmt"

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
// certified host whose certificate no longer stands — it expired (its
// host stopped renewing, or stopped reporting), or its host's
// certificates were revoked — is marked not certified, with an audit row
// and its live event, so a lapse is reported rather than kept quiet.
func (r *Reconciler) lapseCertifications(ctx context.Context) error {
	for {
		due, err := sqlc.New(r.db).LapsedCertifications(ctx, lapseBatch)
		if err != nil {
			return fmt.Errorf("list lapsed certifications: %w", err)
		}
		for _, l := range due {
			if err := r.lapse(ctx, l); err != nil {
				return err
			}
		}
		if len(due) < lapseBatch {
			return nil
		}
	}
}

// lapse marks one instance's host not certified, if the instance is still
// as it was listed (a report may have renewed it meanwhile: the next pass
// looks again), in one transaction with its event and audit row.
func (r *Reconciler) lapse(ctx context.Context, l sqlc.LapsedCertificationsRow) error {
	reason := "expired"
	if l.Revoked {
		reason = "revoked"
	}
	lapsed := false
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		inst, err := q.LapseCertification(ctx, sqlc.LapseCertificationParams{ID: l.ID, Version: l.Version})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // changed meanwhile
		}
		if err != nil {
			return fmt.Errorf("mark not certified: %w", err)
		}
		if err := events.Enqueue(ctx, q, TopicEvents, events.Updated, inst); err != nil {
			return err
		}
		lapsed = true
		details := map[string]any{"validBefore": l.ValidBefore, "reason": reason}
		if inst.HostID != nil {
			details["hostId"] = ids.Encode(ids.Host, *inst.HostID)
		}
		return audit.Write(ctx, q, audit.Event{TenantID: inst.TenantID, Action: ActionCertificateLapsed, TargetType: "instance",
			TargetID: inst.ID, RequestID: lapseRequestID, Details: details})
	})
	if err != nil {
		return fmt.Errorf("lapse the certification of instance %s: %w", ids.Log(ids.Instance, l.ID), err)
	}
	if lapsed {
		r.log.InfoContext(ctx, "host certificate lapsed", "instance", ids.Log(ids.Instance, l.ID), "valid_before", l.ValidBefore, "reason", reason)
	}
	return nil
}
