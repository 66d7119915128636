package events

import (
	"context"
	"fmt"

	"github.com/better-compute/vps/sqlc"
)

// Outbox holds the events of one transaction's instance changes until
// Write, so that a transaction of several changes (the reconciler's steps
// PROVISIONING → STARTING → RUNNING) writes their rows in one statement,
// not one each.
type Outbox struct {
	rows sqlc.InsertOutboxesParams
}

// EnqueueLeased is the package's EnqueueLeased into o. The change of an
// instance of a sandbox may be a step of the sandbox's life, whose record
// reads the rows as they are now and whose event follows its instance's:
// its event and those before it are written at once.
func (o *Outbox) EnqueueLeased(ctx context.Context, q *sqlc.Queries, topic string, typ Type, inst sqlc.Instance, leases []sqlc.IpLease) error {
	payload, err := instancePayload(typ, inst, leases)
	if err != nil {
		return err
	}
	o.rows.Topics = append(o.rows.Topics, topic)
	o.rows.Keys = append(o.rows.Keys, inst.ID)
	o.rows.Channels = append(o.rows.Channels, TenantChannel(inst.TenantID))
	o.rows.Payloads = append(o.rows.Payloads, payload)
	if inst.SandboxID == nil {
		return nil
	}
	if err := o.Write(ctx, q); err != nil {
		return err
	}
	return SandboxStep(ctx, q, inst)
}

// Write writes the events o holds, in the order they came, in one
// statement, and forgets them.
func (o *Outbox) Write(ctx context.Context, q *sqlc.Queries) error {
	if len(o.rows.Keys) == 0 {
		return nil
	}
	if err := q.InsertOutboxes(ctx, o.rows); err != nil {
		return fmt.Errorf("enqueue events of %d instance changes: %w", len(o.rows.Keys), err)
	}
	o.rows = sqlc.InsertOutboxesParams{}
	return nil
}
