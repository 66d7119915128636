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

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// report records a host's runtime report: when it was seen, its inventory,
// and what it saw of each instance whose spec entry it has converged to. A
// report for an older generation cannot undo newer work: an instance whose
// entry changed after that generation is left alone. Every instance whose
// observation changed is handed to the reconciler.
//
// It records the protocol version the host speaks, and accepts reports of
// every version served, older ones without what they lack (stats).
func (g *Gateway) report(w http.ResponseWriter, r *http.Request, host sqlc.Host, version int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReport))
	if err != nil {
		refuse(w, &reportError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("a report is at most %d bytes", maxReport)})
		return
	}
	rep, err := decodeReport(body, version)
	var stats map[uuid.UUID]hostproto.Stats
	if err == nil {
		err = pgx.BeginFunc(r.Context(), g.cfg.DB, func(tx pgx.Tx) error {
			var err error
			stats, err = g.record(r.Context(), sqlc.New(tx), host, version, rep)
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
		if len(stats) > 0 && g.cfg.Stats != nil {
			g.cfg.Stats.HostStats(r.Context(), HostStats{Host: host.ID, At: time.Now(), Instances: stats})
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// maxReport bounds a report's body.
const maxReport = 8 << 20

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
// It returns the report's stats of the host's own instances, for the
// StatsSink once the transaction committed.
func (g *Gateway) record(ctx context.Context, q *sqlc.Queries, host sqlc.Host, version int, rep hostproto.Report) (map[uuid.UUID]hostproto.Stats, error) {
	state, err := q.HostReportState(ctx, host.ID)
	if err != nil {
		return nil, fmt.Errorf("read host: %w", err)
	}
	if rep.Generation > state.SpecGeneration {
		return nil, &reportError{status: http.StatusConflict, field: "generation",
			msg: fmt.Sprintf("%d is ahead of the spec the host was sent (generation %d)", rep.Generation, state.SpecGeneration)}
	}
	prev := state.LastSeenAt
	var wake []uuid.UUID
	if rep.Generation >= state.ReportedGeneration {
		if wake, err = observe(ctx, q, host, rep); err != nil {
			return nil, err
		}
	}
	if rep.Inventory != nil {
		if err := adoptInventory(ctx, q, host.ID, *rep.Inventory); err != nil {
			return nil, err
		}
	}
	if prev == nil || time.Since(*prev) > g.cfg.HostSilentAfter {
		// Back from silence (or new): its instances may be LOST, and
		// pending ones may now fit.
		back, err := q.HostInstances(ctx, &host.ID)
		if err != nil {
			return nil, fmt.Errorf("list host instances: %w", err)
		}
		pending, err := q.PendingInPool(ctx, host.PoolID)
		if err != nil {
			return nil, fmt.Errorf("list pending instances: %w", err)
		}
		wake = append(append(wake, back...), pending...)
	}
	upgraded, err := adoptProtocol(ctx, q, host, version)
	if err != nil {
		return nil, err
	}
	if err := wakeInstances(ctx, q, append(wake, upgraded...)); err != nil {
		return nil, err
	}
	var inventory []byte
	if rep.Inventory != nil {
		inventory, _ = json.Marshal(rep.Inventory)
	}
	if err := q.RecordReport(ctx, sqlc.RecordReportParams{ID: host.ID, Generation: rep.Generation, Inventory: inventory}); err != nil {
		return nil, fmt.Errorf("record host: %w", err)
	}
	return reportedStats(ctx, q, host.ID, rep)
}

// observe records what a report saw of each instance whose spec entry it
// has converged to, and returns the instances whose observation changed.
func observe(ctx context.Context, q *sqlc.Queries, host sqlc.Host, rep hostproto.Report) ([]uuid.UUID, error) {
	var (
		reported = make([]uuid.UUID, 0, len(rep.Instances))
		states   = make([]string, 0, len(rep.Instances))
		reasons  = make([]string, 0, len(rep.Instances))
	)
	for _, st := range rep.Instances {
		id, ok := ids.Decode(ids.Instance, st.ID)
		if !ok {
			continue // not ours
		}
		reported, states, reasons = append(reported, id), append(states, string(st.State)), append(reasons, st.Reason)
	}
	changed, err := q.ObserveReported(ctx, sqlc.ObserveReportedParams{Ids: reported, States: states, Reasons: reasons, Host: &host.ID, Generation: rep.Generation})
	if err != nil {
		return nil, fmt.Errorf("record observations: %w", err)
	}
	absent, err := q.ObserveAbsent(ctx, sqlc.ObserveAbsentParams{Host: &host.ID, Generation: rep.Generation, Reported: reported})
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
