package libvirt

import (
	"context"
	"fmt"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/better-compute/vps/hostproto"
)

// Stats implements hostd.Runtime with one call for every active domain
// (virConnectGetAllDomainStats): its CPU time (cpu.time) and the host
// memory its QEMU process holds (balloon.rss, else the balloon's current
// size), both as libvirt reads them from the host, not from the guest.
func (r *Runtime) Stats(ctx context.Context) (map[string]hostproto.Stats, error) {
	// Nowait: a domain in a job (starting, pausing) is read without
	// waiting for it, since the report that carries the stats is also
	// the host's sign of life, which a wait of seconds would silence.
	recs, err := r.l.ConnectGetAllDomainStats(nil,
		uint32(golibvirt.DomainStatsCPUTotal|golibvirt.DomainStatsBalloon),
		uint32(golibvirt.ConnectGetAllDomainsStatsActive|golibvirt.ConnectGetAllDomainsStatsNowait))
	if err != nil {
		return nil, fmt.Errorf("domain stats: %w", err)
	}
	out := make(map[string]hostproto.Stats, len(recs))
	for _, rec := range recs {
		if !strings.HasPrefix(rec.Dom.Name, "bc-") {
			continue
		}
		id, ours := r.owner(rec.Dom)
		if !ours {
			continue
		}
		var s hostproto.Stats
		var rss, current int64
		for _, p := range rec.Params {
			v, ok := unsigned(p.Value)
			if !ok {
				continue
			}
			switch p.Field {
			case "cpu.time":
				s.CPUTimeNs = v
			case "balloon.rss":
				rss = v << 10 // KiB
			case "balloon.current":
				current = v << 10
			}
		}
		s.MemoryBytes = rss
		if s.MemoryBytes == 0 {
			s.MemoryBytes = current
		}
		out[id] = s
	}
	return out, nil
}

// unsigned reads a typed parameter that is a whole number.
func unsigned(v golibvirt.TypedParamValue) (int64, bool) {
	switch n := v.I.(type) {
	case uint64:
		return int64(n), true
	case int64:
		return n, true
	case uint32:
		return int64(n), true
	case int32:
		return int64(n), true
	}
	return 0, false
}
