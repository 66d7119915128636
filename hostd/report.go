package hostd

import (
	"context"
	"slices"

	"github.com/better-compute/vps/hostproto"
)

// outgoing is a report the main loop hands the post goroutine, with every
// status the daemon has. whole says it must be posted so (the first, and
// a heartbeat's before version 6 or every Config.WholeReportEvery
// heartbeats); otherwise, from version 5, only what changed since the
// last accepted report is posted (partialReport). heartbeat says it is a
// heartbeat's, which carries the stats.
type outgoing struct {
	report    hostproto.Report
	whole     bool
	heartbeat bool
}

// postReports posts the reports the main loop hands it. When a post fails
// it retries with backoff, and with the newest report: one that arrived
// meanwhile replaces the one that failed. It returns when ctx ends.
//
// From version 5 a report that need not be whole is posted partial, with
// only the statuses that changed since the last accepted report; after a
// report failed or was refused, the next is whole.
func (d *Daemon) postReports(ctx context.Context, reports chan outgoing) {
	var (
		retry backoff
		// accepted are the statuses of the last accepted report; nil when
		// the next report must be whole.
		accepted map[string]statusKey
	)
	for {
		var o outgoing
		select {
		case <-ctx.Done():
			return
		case o = <-reports:
		}
		for {
			r := o.report
			if !o.whole && accepted != nil && d.gw.version >= hostproto.DeltaVersion {
				r = partialReport(r, accepted, o.heartbeat && d.gw.version >= hostproto.HeartbeatVersion)
			}
			err := d.gw.report(ctx, r)
			if ctx.Err() == nil {
				d.metrics.reportDone(err)
			}
			if err == nil {
				d.xids.forget(r.Xids)
				accepted = statusKeys(o.report.Instances)
				retry.reset()
				break
			}
			accepted = nil
			if ctx.Err() != nil {
				return
			}
			wait := retry.next()
			d.logGatewayError("report failed", err, wait)
			if !sleep(ctx, wait) {
				return
			}
			select {
			case o = <-reports:
			default:
			}
		}
	}
}

// statusKey is what the gateway records of an instance's status; a status
// whose key is unchanged is left out of a partial report.
type statusKey struct {
	state      hostproto.State
	reason     string
	generation int64
}

func keyOf(st hostproto.InstanceStatus) statusKey {
	return statusKey{st.State, st.Reason, st.Generation}
}

func statusKeys(statuses []hostproto.InstanceStatus) map[string]statusKey {
	out := make(map[string]statusKey, len(statuses))
	for _, st := range statuses {
		out[st.ID] = keyOf(st)
	}
	return out
}

// partialReport is r, a whole report, as a partial one to a gateway that
// accepted the statuses accepted: only the statuses that changed, without
// stats, and as absent the instances accepted listed that r does not.
// withStats (a heartbeat's, version 6) keeps every status's stats in the
// report's Stats.
func partialReport(r hostproto.Report, accepted map[string]statusKey, withStats bool) hostproto.Report {
	p := r
	p.Partial, p.Instances = true, []hostproto.InstanceStatus{}
	listed := make(map[string]bool, len(r.Instances))
	for _, st := range r.Instances {
		listed[st.ID] = true
		if withStats && st.Stats != nil {
			if p.Stats == nil {
				p.Stats = make(map[string]hostproto.Stats)
			}
			p.Stats[st.ID] = *st.Stats
		}
		if k, ok := accepted[st.ID]; ok && k == keyOf(st) {
			continue
		}
		st.Stats = nil
		p.Instances = append(p.Instances, st)
	}
	for id := range accepted {
		if !listed[id] {
			p.Absent = append(p.Absent, id)
		}
	}
	slices.Sort(p.Absent)
	return p
}

// addStats gives each running or paused instance of statuses its Stats. A
// Runtime that cannot read them leaves the report without; the next one
// tries again.
func (d *Daemon) addStats(ctx context.Context, statuses []hostproto.InstanceStatus) {
	stats, err := d.cfg.Runtime.Stats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("report without domain stats", "err", err)
		}
		return
	}
	for i, st := range statuses {
		if st.State != hostproto.StateRunning && st.State != hostproto.StatePaused {
			continue
		}
		if s, ok := stats[st.ID]; ok {
			statuses[i].Stats = &s
		}
	}
}
