package app

import (
	"context"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/gateway"
)

// statsSink hands the stats hosts report to the stats recorder: the
// gateway knows the host protocol, control the database.
type statsSink struct{ rec *control.StatsRecorder }

func (s statsSink) HostStats(_ context.Context, hs gateway.HostStats) {
	samples := make(map[uuid.UUID]control.StatSample, len(hs.Instances))
	for id, st := range hs.Instances {
		samples[id] = control.StatSample{At: hs.At, CPUTimeNs: st.CPUTimeNs, MemoryBytes: st.MemoryBytes}
	}
	s.rec.Add(hs.Host, hs.At, samples)
}
