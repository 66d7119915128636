package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// StatsSink takes the domain stats hosts report. The gateway stores none
// of them: what to keep, and for how long, is the control plane's (issue
// 13 keeps a sandbox's for its life and an hour after).
type StatsSink interface {
	// HostStats is handed the stats of one accepted report, after its
	// transaction committed. It runs in the host's request, so it must
	// return quickly; the next report comes within a heartbeat.
	HostStats(ctx context.Context, s HostStats)
}

// HostStats are the stats of one host's report.
type HostStats struct {
	Host uuid.UUID
	// At is when the gateway accepted the report.
	At time.Time
	// Instances are the stats of the host's own instances, by ID: stats a
	// host reports of an instance it does not hold are dropped.
	Instances map[uuid.UUID]hostproto.Stats
}

// reportedStats returns the stats rep carries of the host's own
// instances; nil when it carries none.
func reportedStats(ctx context.Context, q *sqlc.Queries, host uuid.UUID, rep hostproto.Report) (map[uuid.UUID]hostproto.Stats, error) {
	var out map[uuid.UUID]hostproto.Stats
	add := func(s string, st hostproto.Stats) {
		id, ok := ids.Decode(ids.Instance, s)
		if !ok {
			return
		}
		if out == nil {
			out = make(map[uuid.UUID]hostproto.Stats)
		}
		out[id] = st
	}
	for _, st := range rep.Instances {
		if st.Stats != nil {
			add(st.ID, *st.Stats)
		}
	}
	for id, st := range rep.Stats {
		add(id, st)
	}
	if out == nil {
		return nil, nil
	}
	own, err := q.HostInstances(ctx, &host)
	if err != nil {
		return nil, fmt.Errorf("list host instances: %w", err)
	}
	held := make(map[uuid.UUID]bool, len(own))
	for _, id := range own {
		held[id] = true
	}
	for id := range out {
		if !held[id] {
			delete(out, id)
		}
	}
	return out, nil
}
