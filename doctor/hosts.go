package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/ids"
)

// checkCapacity finds adopted hosts without capacity: nothing is placed
// on them (vps.hosts.capacity).
func checkCapacity(ctx context.Context, d *Doctor) ([]Finding, error) {
	hosts, err := d.q.DoctorHostsWithoutCapacity(ctx)
	if err != nil {
		return nil, fmt.Errorf("list hosts without capacity: %w", err)
	}
	var out []Finding
	for _, h := range hosts {
		out = append(out, Finding{
			Code: "vps.hosts.capacity", Level: LevelWarning, Objects: []string{ids.Encode(ids.Host, h.ID)},
			Message: fmt.Sprintf("host %s has no capacity: nothing is placed on it", h.Name),
			Remedy:  "set its capacity (setHostCapacity)",
		})
	}
	return out, nil
}

// checkSilentHosts finds hosts that reported once but not within the
// silence timeout: their instances are LOST (vps.hosts.silent).
func checkSilentHosts(ctx context.Context, d *Doctor) ([]Finding, error) {
	hosts, err := d.q.DoctorSilentHosts(ctx, time.Now().Add(-d.cfg.HostSilentAfter))
	if err != nil {
		return nil, fmt.Errorf("list silent hosts: %w", err)
	}
	var out []Finding
	for _, h := range hosts {
		out = append(out, Finding{
			Code: "vps.hosts.silent", Level: LevelError, Objects: []string{ids.Encode(ids.Host, h.ID)},
			Message: fmt.Sprintf("host %s last reported at %s, more than %s ago: its instances are LOST", h.Name, h.LastSeenAt.UTC().Format(time.RFC3339), d.cfg.HostSilentAfter),
			Remedy:  "check that its host daemon runs and reaches the gateway (its log says why not), or drain it and delete its instances",
		})
	}
	return out, nil
}
