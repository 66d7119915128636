package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/ids"
)

// checkHeld finds allocations, device claims and IP leases still held by
// DELETED instances: capacity, devices or addresses leaked
// (vps.instances.held).
func checkHeld(ctx context.Context, d *Doctor) ([]Finding, error) {
	rows, err := d.q.DoctorHeldByDeleted(ctx)
	if err != nil {
		return nil, fmt.Errorf("list what deleted instances hold: %w", err)
	}
	var out []Finding
	for _, r := range rows {
		out = append(out, Finding{
			Code: "vps.instances.held", Level: LevelError, Objects: []string{ids.Encode(ids.Instance, r.InstanceID)},
			Message: fmt.Sprintf("instance %s is DELETED but still holds %s %s", ids.Encode(ids.Instance, r.InstanceID), article(r.Kind), r.Kind),
			Remedy:  "a reconciler bug leaked it: report it; releasing it by hand (set released_at) gives it back",
		})
	}
	return out, nil
}

func article(kind string) string {
	if kind == "allocation" || kind == "IP lease" {
		return "an"
	}
	return "a"
}

// checkStuck finds instances in a transitional state for longer than
// StuckAfter (vps.instances.stuck).
func checkStuck(ctx context.Context, d *Doctor) ([]Finding, error) {
	rows, err := d.q.DoctorStuckInstances(ctx, time.Now().Add(-d.cfg.StuckAfter))
	if err != nil {
		return nil, fmt.Errorf("list stuck instances: %w", err)
	}
	var out []Finding
	for _, r := range rows {
		msg := fmt.Sprintf("instance %s has been %s since %s", ids.Encode(ids.Instance, r.ID), r.State, r.UpdatedAt.UTC().Format(time.RFC3339))
		if r.StateReason != "" {
			msg += ": " + r.StateReason
		}
		out = append(out, Finding{
			Code: "vps.instances.stuck", Level: LevelWarning, Objects: []string{ids.Encode(ids.Instance, r.ID)},
			Message: msg,
			Remedy:  "read its state reason and its host's or provider's health; a reconcile process must be running",
		})
	}
	return out, nil
}
