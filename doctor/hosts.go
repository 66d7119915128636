package doctor

import (
	"context"
	"fmt"
	"strings"
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

// checkCertificates finds hosts holding instances whose certificate has
// lapsed (an error: their instances are no longer on a certified host) or
// expires within the certified margin (a warning: it should have renewed
// by now) (vps.hosts.certificates).
func checkCertificates(ctx context.Context, d *Doctor) ([]Finding, error) {
	now := time.Now()
	hosts, err := d.q.DoctorHostCertificates(ctx, now.Add(d.cfg.CertifiedMargin))
	if err != nil {
		return nil, fmt.Errorf("list hosts whose certificate lapses: %w", err)
	}
	var out []Finding
	for _, h := range hosts {
		f := Finding{
			Code: "vps.hosts.certificates", Level: LevelWarning, Objects: []string{ids.Encode(ids.Host, h.ID)},
			Message: fmt.Sprintf("the certificate of host %s expires at %s, within %s, and it holds %d instances (%d in pools that require certified hosts)",
				h.Name, h.CertNotAfter.UTC().Format(time.RFC3339), d.cfg.CertifiedMargin, h.Instances, h.InCertifiedPools),
			Remedy: "check that its host daemon runs and renews its certificate (its log says why not); if it cannot, drain the host",
		}
		if !h.CertNotAfter.After(now) {
			f.Level = LevelError
			f.Message = fmt.Sprintf("the certificate of host %s lapsed at %s, and it holds %d instances (%d in pools that require certified hosts): they are no longer on a certified host",
				h.Name, h.CertNotAfter.UTC().Format(time.RFC3339), h.Instances, h.InCertifiedPools)
			f.Remedy = "let the host join again for a new certificate (or fix what stopped its renewal), or drain it and move its instances"
		}
		out = append(out, f)
	}
	return out, nil
}

// checkGPUs finds hosts with GPUs marked unhealthy by a fatal Xid: nothing
// new is placed on those devices, and an instance holding one runs on a
// broken device (vps.hosts.gpus, a warning per host naming its devices,
// their Xids and holders).
func checkGPUs(ctx context.Context, d *Doctor) ([]Finding, error) {
	gpus, err := d.q.DoctorUnhealthyGPUs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list unhealthy GPUs: %w", err)
	}
	var out []Finding
	var devices []string
	held := 0
	for i, g := range gpus {
		if i == 0 || g.HostID != gpus[i-1].HostID {
			devices, held = nil, 0
			out = append(out, Finding{
				Code: "vps.hosts.gpus", Level: LevelWarning, Objects: []string{ids.Encode(ids.Host, g.HostID)},
				Remedy: "look at the devices (nvidia-smi, the host's kernel log); move the instances holding one, then clear the mark (clearGpuHealth) once a device is sound, or drain the host",
			})
		}
		f := &out[len(out)-1]
		dev := g.Address + " (" + g.Model
		if g.LastXid != nil {
			dev += fmt.Sprintf(", Xid %d", *g.LastXid)
		}
		dev += ", since " + g.UnhealthySince.UTC().Format(time.RFC3339)
		if g.Holder != nil {
			held++
			inst := ids.Encode(ids.Instance, *g.Holder)
			f.Objects = append(f.Objects, inst)
			dev += ", held by instance " + inst
		}
		devices = append(devices, dev+")")
		gpus := "GPUs"
		if len(devices) == 1 {
			gpus = "GPU"
		}
		f.Message = fmt.Sprintf("host %s has %d unhealthy %s, %d held by an instance: %s; nothing new is placed on them",
			g.HostName, len(devices), gpus, held, strings.Join(devices, "; "))
	}
	return out, nil
}
