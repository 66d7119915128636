package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/text"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// ActGPUFailed is the audit action of an instance whose GPU a fatal Xid
// marked unhealthy, written by the system (no principal).
const ActGPUFailed = "instance.gpu_failed"

// checkXids checks the Xid events of a report before anything of it is
// stored: at most hostproto.MaxXids, each of a PCI address, a code from 1
// to hostproto.MaxXidCode, a time, and a message the database can store.
func checkXids(xids []hostproto.Xid) error {
	if len(xids) > hostproto.MaxXids {
		return badReport("xids", "at most %d events", hostproto.MaxXids)
	}
	for i, x := range xids {
		field := fmt.Sprintf("xids[%d]", i)
		switch {
		case !domain.IsPCIAddress(x.Address):
			return badReport(field+".address", "%q is not a PCI address such as 0000:3b:00.0", x.Address)
		case x.Code < 1 || x.Code > hostproto.MaxXidCode:
			return badReport(field+".code", "must be between 1 and %d", hostproto.MaxXidCode)
		case x.At.IsZero():
			return badReport(field+".at", "is required")
		case len(x.Message) > hostproto.MaxXidMessage:
			return badReport(field+".message", "at most %d bytes", hostproto.MaxXidMessage)
		}
		if err := text.Check(x.Message); err != nil {
			return badReport(field+".message", "%v", err)
		}
	}
	return nil
}

// checkXidDevices refuses (400) an Xid event of a device that is not one
// of the host's GPUs: neither recorded nor in the report's inventory.
func checkXidDevices(ctx context.Context, q *sqlc.Queries, host uuid.UUID, rep hostproto.Report) error {
	if len(rep.Xids) == 0 {
		return nil
	}
	known := map[string]bool{}
	if rep.Inventory != nil {
		for _, g := range rep.Inventory.GPUs {
			known[g.Address] = true
		}
	}
	gpus, err := q.ListHostGPUs(ctx, []uuid.UUID{host})
	if err != nil {
		return fmt.Errorf("read host GPUs: %w", err)
	}
	for _, g := range gpus {
		known[g.Address] = true
	}
	for i, x := range rep.Xids {
		if !known[x.Address] {
			return badReport(fmt.Sprintf("xids[%d].address", i), "%s is not a GPU of this host", x.Address)
		}
	}
	return nil
}

// recordXids is the Xid handler: each Xid becomes its device's last one,
// and a fatal one (domain.FatalXid) marks a healthy device unhealthy, which
// placement then skips. The instance holding a device just marked gets a
// state reason naming it (domain.GPUFailedReason), its live UPDATED event
// and an audit row (ActGPUFailed).
func (g *Gateway) recordXids(ctx context.Context, q *sqlc.Queries, r hostReport) (recorded, error) {
	host := r.host.Host
	for _, x := range r.report.Xids {
		if _, err := q.RecordXid(ctx, sqlc.RecordXidParams{HostID: host.ID, Address: x.Address, Code: ptr(int32(x.Code)), At: &x.At}); err != nil {
			return recorded{}, fmt.Errorf("record Xid %d of %s: %w", x.Code, x.Address, err)
		}
		if !domain.FatalXid(x.Code) {
			continue
		}
		reason := domain.XidReason(x.Code, x.Message)
		_, err := q.MarkGPUUnhealthy(ctx, sqlc.MarkGPUUnhealthyParams{HostID: host.ID, Address: x.Address, At: &x.At, Reason: &reason})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // marked before, or not recorded (the inventory was not adopted)
		}
		if err != nil {
			return recorded{}, fmt.Errorf("mark GPU %s unhealthy: %w", x.Address, err)
		}
		g.log.WarnContext(ctx, "GPU marked unhealthy", "host", host.Name, "address", x.Address, "xid", x.Code, "reason", reason)
		holder, err := q.GPUHolder(ctx, sqlc.GPUHolderParams{HostID: host.ID, Address: x.Address})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return recorded{}, fmt.Errorf("read holder of GPU %s: %w", x.Address, err)
		}
		if err := gpuFailed(ctx, q, host, holder, x, reason); err != nil {
			return recorded{}, err
		}
	}
	return recorded{}, nil
}

// gpuFailed tells of an instance whose device was marked unhealthy: its
// state reason, its live event and an audit row.
func gpuFailed(ctx context.Context, q *sqlc.Queries, host sqlc.Host, id uuid.UUID, x hostproto.Xid, healthReason string) error {
	inst, err := q.LockInstance(ctx, id)
	if err != nil {
		return fmt.Errorf("lock instance %s: %w", ids.Log(ids.Instance, id), err)
	}
	out, err := q.SetStateReason(ctx, sqlc.SetStateReasonParams{ID: inst.ID, Version: inst.Version,
		StateReason: domain.GPUFailedReason(host.Name, x.Address, healthReason)})
	if err != nil {
		return fmt.Errorf("give instance %s its reason: %w", ids.Log(ids.Instance, id), err)
	}
	if err := events.Enqueue(ctx, q, vps.TopicEvents, events.Updated, out); err != nil {
		return err
	}
	return audit.Write(ctx, q, audit.Event{TenantID: inst.TenantID, Action: ActGPUFailed, TargetType: "instance", TargetID: inst.ID,
		RequestID: audit.RequestID(ctx), Details: map[string]any{
			"host": host.Name, "address": x.Address, "xid": x.Code, "message": x.Message, "at": x.At,
		}})
}
