package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// report records a host's runtime report: when it was seen, its inventory,
// and what it saw of each instance whose spec entry it has converged to. A
// report for an older generation cannot undo newer work: an instance whose
// entry changed after that generation is left alone. Every instance whose
// observation changed is handed to the reconciler.
func (g *Gateway) report(w http.ResponseWriter, r *http.Request, host sqlc.Host) {
	var rep hostproto.Report
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&rep); err != nil {
		http.Error(w, "report is not valid JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	if rep.Protocol != hostproto.Version {
		http.Error(w, fmt.Sprintf("report protocol %d, want %d", rep.Protocol, hostproto.Version), http.StatusBadRequest)
		return
	}
	if err := pgx.BeginFunc(r.Context(), g.cfg.DB, func(tx pgx.Tx) error {
		return g.record(r.Context(), sqlc.New(tx), host, rep)
	}); err != nil {
		g.fail(w, r, "record report", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// record writes a report in one transaction. It locks the host's row last:
// the reconciler locks an instance, then its host (to bump the spec
// generation), so a report locking the host first and then its instances
// would deadlock with it.
func (g *Gateway) record(ctx context.Context, q *sqlc.Queries, host sqlc.Host, rep hostproto.Report) error {
	prev, err := q.HostLastSeen(ctx, host.ID)
	if err != nil {
		return fmt.Errorf("read host: %w", err)
	}
	if rep.Inventory != nil {
		if err := adoptInventory(ctx, q, host.ID, *rep.Inventory); err != nil {
			return err
		}
	}
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
		return fmt.Errorf("record observations: %w", err)
	}
	absent, err := q.ObserveAbsent(ctx, sqlc.ObserveAbsentParams{Host: &host.ID, Generation: rep.Generation, Reported: reported})
	if err != nil {
		return fmt.Errorf("record absences: %w", err)
	}
	wake := append(changed, absent...)
	if prev == nil || time.Since(*prev) > g.cfg.HostSilentAfter {
		// Back from silence (or new): its instances may be LOST, and
		// pending ones may now fit.
		back, err := q.HostInstances(ctx, &host.ID)
		if err != nil {
			return fmt.Errorf("list host instances: %w", err)
		}
		pending, err := q.PendingInPool(ctx, host.PoolID)
		if err != nil {
			return fmt.Errorf("list pending instances: %w", err)
		}
		wake = append(append(wake, back...), pending...)
	}
	for _, id := range wake {
		if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicInstances, Key: id}); err != nil {
			return fmt.Errorf("wake instance: %w", err)
		}
	}
	var inventory []byte
	if rep.Inventory != nil {
		inventory, _ = json.Marshal(rep.Inventory)
	}
	if err := q.RecordReport(ctx, sqlc.RecordReportParams{ID: host.ID, Generation: rep.Generation, Inventory: inventory}); err != nil {
		return fmt.Errorf("record host: %w", err)
	}
	return nil
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
