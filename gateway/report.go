package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// report records a host's runtime report: when it was seen, its inventory,
// what it saw of each instance whose spec entry it has converged to, and
// (version 3) the statuses of its commands. A
// report for an older generation cannot undo newer work: an instance whose
// entry changed after that generation is left alone. Every instance whose
// observation changed is handed to the reconciler.
//
// It records the protocol version the host speaks, and accepts reports of
// every version served, older ones without what they lack (stats).
func (g *Gateway) report(w http.ResponseWriter, r *http.Request, host authenticatedHost, version int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReport))
	if err != nil {
		refuse(w, &reportError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("a report is at most %d bytes", maxReport)})
		return
	}
	rep, err := decodeReport(body, version)
	var rec recorded
	if err == nil {
		err = pgx.BeginFunc(r.Context(), g.cfg.DB, func(tx pgx.Tx) error {
			var err error
			rec, err = g.record(r.Context(), sqlc.New(tx), host, version, rep)
			return err
		})
	}
	var refused *reportError
	switch {
	case errors.As(err, &refused):
		refuse(w, refused)
	case err != nil:
		g.fail(w, r, "record report", err)
	default:
		if rec.specChanged {
			g.wakeHost(r.Context(), host.ID)
		}
		if len(rec.stats) > 0 && g.cfg.Stats != nil {
			g.cfg.Stats.HostStats(r.Context(), HostStats{Host: host.ID, At: time.Now(), Instances: rec.stats})
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// maxReport bounds a report's body.
const maxReport = 8 << 20

// recorded is what a recorded report leaves to do once its transaction
// committed.
type recorded struct {
	// stats are the report's stats of the host's own instances, for the
	// StatsSink.
	stats map[uuid.UUID]hostproto.Stats
	// specChanged: a command was acknowledged, so the host's spec changed
	// and its long-poll is to be woken.
	specChanged bool
}

// record writes a report in one transaction. It locks the host's row last:
// the reconciler locks an instance, then its host (to bump the spec
// generation), so a report locking the host first and then its instances
// would deadlock with it.
//
// A report of a generation the host was never sent is refused (409). One
// older than the host already reported is late (or from a daemon that
// restarted and has no spec yet, at generation 0): it counts as a
// heartbeat, but says nothing of instances, which a newer report already
// spoke for, and leaves the reported generation where it is.
//
// The statuses of commands (version 3) are recorded whatever the report's
// generation: a command's final state is never overwritten. Acknowledging
// one bumps the host's spec generation, so the command leaves the spec.
// How the host proved itself (certificate or bearer credential) is
// recorded on its live instances whatever the generation too.
func (g *Gateway) record(ctx context.Context, q *sqlc.Queries, auth authenticatedHost, version int, rep hostproto.Report) (recorded, error) {
	var rec recorded
	host := auth.Host
	state, err := q.HostReportState(ctx, host.ID)
	if err != nil {
		return rec, fmt.Errorf("read host: %w", err)
	}
	if rep.Generation > state.SpecGeneration {
		return rec, &reportError{status: http.StatusConflict, field: "generation",
			msg: fmt.Sprintf("%d is ahead of the spec the host was sent (generation %d)", rep.Generation, state.SpecGeneration)}
	}
	prev := state.LastSeenAt
	var wake []uuid.UUID
	if rep.Generation >= state.ReportedGeneration {
		if wake, err = observe(ctx, q, host, version, rep); err != nil {
			return rec, err
		}
	}
	// Beside the observations, so the report takes its instances' row
	// locks before any other.
	if err := recordCertification(ctx, q, auth); err != nil {
		return rec, err
	}
	if rec.specChanged, err = g.recordCommands(ctx, q, host, rep.Commands); err != nil {
		return rec, err
	}
	if rep.Inventory != nil {
		if err := adoptInventory(ctx, q, host.ID, *rep.Inventory); err != nil {
			return rec, err
		}
	}
	if prev == nil || time.Since(*prev) > g.cfg.HostSilentAfter {
		// Back from silence (or new): its instances may be LOST, and
		// pending ones may now fit.
		back, err := q.HostInstances(ctx, &host.ID)
		if err != nil {
			return rec, fmt.Errorf("list host instances: %w", err)
		}
		pending, err := q.PendingInPool(ctx, host.PoolID)
		if err != nil {
			return rec, fmt.Errorf("list pending instances: %w", err)
		}
		wake = append(append(wake, back...), pending...)
	}
	upgraded, err := adoptProtocol(ctx, q, host, version)
	if err != nil {
		return rec, err
	}
	if err := events.Wake(ctx, q, append(wake, upgraded...)); err != nil {
		return rec, err
	}
	if rec.specChanged {
		if _, err := q.BumpHostGeneration(ctx, host.ID); err != nil {
			return rec, fmt.Errorf("bump host generation: %w", err)
		}
	}
	var inventory []byte
	if rep.Inventory != nil {
		inventory, _ = json.Marshal(rep.Inventory)
	}
	if err := q.RecordReport(ctx, sqlc.RecordReportParams{ID: host.ID, Generation: rep.Generation, Inventory: inventory}); err != nil {
		return rec, fmt.Errorf("record host: %w", err)
	}
	rec.stats, err = reportedStats(ctx, q, host.ID, rep)
	return rec, err
}

// observe records what a report saw of each instance whose spec entry it
// has converged to, and returns the instances whose observation changed.
// Before version 3 the report's generation says which entries it has
// converged to; from version 3 each status says it for its instance (one
// that does not, generation 0, stands at the report's), and an instance
// still being defined is neither observed nor absent.
func observe(ctx context.Context, q *sqlc.Queries, host sqlc.Host, version int, rep hostproto.Report) ([]uuid.UUID, error) {
	var (
		listed   = make([]uuid.UUID, 0, len(rep.Instances))
		observed = make([]uuid.UUID, 0, len(rep.Instances))
		states   = make([]string, 0, len(rep.Instances))
		reasons  = make([]string, 0, len(rep.Instances))
		gens     = make([]int64, 0, len(rep.Instances))
	)
	for _, st := range rep.Instances {
		id, ok := ids.Decode(ids.Instance, st.ID)
		if !ok {
			continue // not ours
		}
		listed = append(listed, id)
		if st.State == hostproto.StateDefining {
			continue
		}
		gen := rep.Generation
		if version >= hostproto.CommandsVersion && st.Generation > 0 {
			gen = st.Generation
		}
		observed, states, reasons, gens = append(observed, id), append(states, string(st.State)), append(reasons, st.Reason), append(gens, gen)
	}
	changed, err := q.ObserveReported(ctx, sqlc.ObserveReportedParams{Ids: observed, States: states, Reasons: reasons, Generations: gens, Host: &host.ID})
	if err != nil {
		return nil, fmt.Errorf("record observations: %w", err)
	}
	absent, err := q.ObserveAbsent(ctx, sqlc.ObserveAbsentParams{Host: &host.ID, Generation: rep.Generation, Reported: listed})
	if err != nil {
		return nil, fmt.Errorf("record absences: %w", err)
	}
	return append(changed, absent...), nil
}

// adoptInventory gives a host without capacity the capacity it reports,
// so operators need not type it; capacity an operator set is kept.
func adoptInventory(ctx context.Context, q *sqlc.Queries, host uuid.UUID, inv hostproto.Inventory) error {
	if err := q.AdoptInventoryCapacity(ctx, sqlc.AdoptInventoryCapacityParams{HostID: host, Vcpus: int32(inv.Vcpus), MemoryMb: inv.MemoryMB, DiskGb: inv.DiskGB}); err != nil {
		return fmt.Errorf("adopt capacity: %w", err)
	}
	for _, gpu := range inv.GPUs {
		if err := q.AdoptInventoryGPU(ctx, sqlc.AdoptInventoryGPUParams{HostID: host, Address: gpu.Address, Vendor: gpu.Vendor, Model: gpu.Model}); err != nil {
			return fmt.Errorf("adopt GPU %s: %w", gpu.Address, err)
		}
	}
	return nil
}
