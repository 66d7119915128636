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

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// report records a host's runtime report: when it was seen, its inventory,
// what it saw of each instance whose spec entry it has converged to, (version
// 3) the statuses of its commands, and (version 4) its GPUs' Xid events. A
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
			rec, err = g.record(r.Context(), tx, hostReport{host: host, version: version, report: rep})
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
		if rec.proof != nil {
			g.proofs.Store(host.ID, *rec.proof)
		}
		if len(rec.stats) > 0 && g.cfg.Stats != nil {
			g.cfg.Stats.HostStats(r.Context(), HostStats{Host: host.ID, At: time.Now(), Instances: rec.stats})
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// maxReport bounds a report's body.
const maxReport = 8 << 20

// hostReport is a report, checked, as each of its handlers sees it.
type hostReport struct {
	host    authenticatedHost
	version int
	report  hostproto.Report
	// before is the host's row as the report found it: when the host was
	// last seen, the generation it was sent and the one it last reported.
	before sqlc.HostReportStateRow
}

// reportHandler is one status handler of the report chain: it records
// what it takes of a report in the report's transaction, inside a
// savepoint of its own, and says what is left to do.
type reportHandler struct {
	// name labels its failures in the log and the metrics.
	name   string
	handle handleFunc
	// needed, if set, says whether a report gives the handler anything to
	// do; one that does not is skipped, savepoint and all.
	needed func(r hostReport) bool
}

// handleFunc records, with q, what a handler takes of r.
type handleFunc func(ctx context.Context, q *sqlc.Queries, r hostReport) (recorded, error)

// handlers are the gateway's report handlers, in the order they run. A
// handler locks instance rows before the host's, and a handler that locks
// the host's row runs last: the reconciler locks an instance, then its
// host, and the report writes the host's row after every handler (see
// record).
func (g *Gateway) handlers() []reportHandler {
	return []reportHandler{
		{name: "instances", handle: g.recordInstances},
		{name: "certification", handle: g.recordCertification, needed: g.certificationNeeded},
		{name: "xids", handle: g.recordXids, needed: func(r hostReport) bool { return len(r.report.Xids) > 0 }},
	}
}

// errHandlerFailed is the failure of a handler made to fail
// (Config.failHandler).
var errHandlerFailed = errors.New("failed on purpose")

// failAfter runs handle and then fails, its writes made.
func failAfter(handle handleFunc) handleFunc {
	return func(ctx context.Context, q *sqlc.Queries, r hostReport) (recorded, error) {
		if _, err := handle(ctx, q, r); err != nil {
			return recorded{}, err
		}
		return recorded{}, errHandlerFailed
	}
}

// recorded is what a report's handlers leave to do: in its transaction
// once they all ran, or once it committed.
type recorded struct {
	// stats are the report's stats of the host's own instances, for the
	// StatsSink.
	stats map[uuid.UUID]hostproto.Stats
	// specChanged: a command was acknowledged, so the host's spec
	// generation is to be bumped and its long-poll woken.
	specChanged bool
	// proof is how the host proved itself, recorded on its instances, to
	// remember once the report committed (recordCertification).
	proof *certProof
}

func (r *recorded) add(o recorded) {
	r.specChanged = r.specChanged || o.specChanged
	if o.proof != nil {
		r.proof = o.proof
	}
	for id, st := range o.stats {
		if r.stats == nil {
			r.stats = make(map[uuid.UUID]hostproto.Stats, len(o.stats))
		}
		r.stats[id] = st
	}
}

// record writes a report in tx. What is at odds with the host's row is
// refused before any handler runs: a report of a generation the host was
// never sent (409), or an Xid of a device the host does not have (400).
// Then each handler runs in a savepoint of its own: one that fails is
// rolled back alone, logged and counted, and the report is still
// accepted with what the others recorded. Last the report notes the host
// (seen now, its reported generation, protocol and inventory) and bumps its
// spec generation when a handler changed its spec.
//
// It locks the host's row last: the reconciler locks an instance, then its
// host (to bump the spec generation), so a report locking the host first
// and then its instances would deadlock with it.
func (g *Gateway) record(ctx context.Context, tx pgx.Tx, r hostReport) (recorded, error) {
	var rec recorded
	q := sqlc.New(tx)
	host, rep := r.host.Host, r.report
	var err error
	if r.before, err = q.HostReportState(ctx, host.ID); err != nil {
		return rec, fmt.Errorf("read host: %w", err)
	}
	if rep.Generation > r.before.SpecGeneration {
		return rec, &reportError{status: http.StatusConflict, field: "generation",
			msg: fmt.Sprintf("%d is ahead of the spec the host was sent (generation %d)", rep.Generation, r.before.SpecGeneration)}
	}
	if err := checkXidDevices(ctx, q, host.ID, rep); err != nil {
		return rec, err
	}
	for _, h := range g.chain {
		if h.needed != nil && !h.needed(r) {
			continue
		}
		out, err := runHandler(ctx, tx, h, r)
		if err != nil {
			if ctx.Err() != nil {
				return rec, err
			}
			g.log.ErrorContext(ctx, "report handler failed; its writes are rolled back, the others' kept",
				"host", host.Name, "handler", h.name, "request_id", audit.RequestID(ctx), "err", err)
			g.handlerFailures.WithLabelValues(h.name).Inc()
			continue
		}
		rec.add(out)
	}
	upgraded, err := adoptProtocol(ctx, q, host, r.version)
	if err != nil {
		return rec, err
	}
	if err := events.Wake(ctx, q, upgraded); err != nil {
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
	return rec, nil
}

// runHandler runs h inside a savepoint of tx, which its failure rolls back.
func runHandler(ctx context.Context, tx pgx.Tx, h reportHandler, r hostReport) (out recorded, err error) {
	err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		var err error
		out, err = h.handle(ctx, sqlc.New(sp), r)
		return err
	})
	if err != nil {
		return recorded{}, fmt.Errorf("%s handler: %w", h.name, err)
	}
	return out, nil
}

// recordInstances is the instance status handler: what the host saw of
// its instances, the statuses of its commands and its inventory; it hands
// the reconciler every instance whose observation changed, and when the
// host was silent before (or is new) all its instances and the pool's
// pending ones.
//
// A report of a generation older than the host already reported is late
// (or from a daemon that restarted and has no spec yet, at generation 0):
// it counts as a heartbeat, but says nothing of instances, which a newer
// report already spoke for.
//
// The statuses of commands (version 3) are recorded whatever the report's
// generation: a command's final state is never overwritten. Acknowledging
// one changes the host's spec, so the command leaves it.
func (g *Gateway) recordInstances(ctx context.Context, q *sqlc.Queries, r hostReport) (recorded, error) {
	var rec recorded
	host, rep := r.host.Host, r.report
	var (
		wake []uuid.UUID
		err  error
	)
	if rep.Generation >= r.before.ReportedGeneration {
		if wake, err = observe(ctx, q, host, r.version, rep); err != nil {
			return rec, err
		}
	}
	if rec.specChanged, err = g.recordCommands(ctx, q, host, rep.Commands); err != nil {
		return rec, err
	}
	if rep.Inventory != nil {
		if err := adoptInventory(ctx, q, host.ID, *rep.Inventory, r.before.HasCapacity); err != nil {
			return rec, err
		}
	}
	if prev := r.before.LastSeenAt; prev == nil || time.Since(*prev) > g.cfg.HostSilentAfter {
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
	if err := events.Wake(ctx, q, wake); err != nil {
		return rec, err
	}
	rec.stats, err = reportedStats(ctx, q, host.ID, rep)
	return rec, err
}

// observe records what a report saw of each instance whose spec entry it
// has converged to, and returns the instances whose observation changed.
// Before version 3 the report's generation says which entries it has
// converged to; from version 3 each status says it for its instance (one
// that does not, generation 0, stands at the report's), and an instance
// still being defined is neither observed nor absent. An instance missing
// from a whole report is absent; from a partial one (version 5), only
// those it lists as absent are.
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
	var changed []uuid.UUID
	if len(observed) > 0 {
		var err error
		if changed, err = q.ObserveReported(ctx, sqlc.ObserveReportedParams{Ids: observed, States: states, Reasons: reasons, Generations: gens, Host: &host.ID}); err != nil {
			return nil, fmt.Errorf("record observations: %w", err)
		}
	}
	p := sqlc.ObserveAbsentParams{Host: &host.ID, Generation: rep.Generation, Reported: listed}
	if rep.Partial {
		if len(rep.Absent) == 0 {
			return changed, nil
		}
		p.Gone = make([]uuid.UUID, 0, len(rep.Absent))
		for _, s := range rep.Absent {
			if id, ok := ids.Decode(ids.Instance, s); ok {
				p.Gone = append(p.Gone, id)
			}
		}
	}
	absent, err := q.ObserveAbsent(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("record absences: %w", err)
	}
	return append(changed, absent...), nil
}

// adoptInventory gives a host without capacity the capacity it reports,
// so operators need not type it; capacity an operator set (or one adopted
// before: hasCapacity) is kept.
func adoptInventory(ctx context.Context, q *sqlc.Queries, host uuid.UUID, inv hostproto.Inventory, hasCapacity bool) error {
	if !hasCapacity {
		if err := q.AdoptInventoryCapacity(ctx, sqlc.AdoptInventoryCapacityParams{HostID: host, Vcpus: int32(inv.Vcpus), MemoryMb: inv.MemoryMB, DiskGb: inv.DiskGB}); err != nil {
			return fmt.Errorf("adopt capacity: %w", err)
		}
	}
	for _, gpu := range inv.GPUs {
		if err := q.AdoptInventoryGPU(ctx, sqlc.AdoptInventoryGPUParams{HostID: host, Address: gpu.Address, Vendor: gpu.Vendor, Model: gpu.Model}); err != nil {
			return fmt.Errorf("adopt GPU %s: %w", gpu.Address, err)
		}
	}
	return nil
}
