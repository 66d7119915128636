package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// The steps of a provider bootstrap, beyond Created, Updated and Failed:
// each is the state it reached.
const (
	// Provisioning: its machine exists at the provider and has until its
	// deadline to join.
	Provisioning Type = "PROVISIONING"
	// Joined: its machine joined and became its host.
	Joined Type = "JOINED"
)

// KindBootstrap is the Kind of provider bootstrap events.
const KindBootstrap = "providerBootstrap"

// OperatorChannel is the channel, below the Redis prefix, of the events
// only operators see (provider bootstraps). It matches the hub's pattern
// and is no tenant's: tenant channels end in an encoded tenant ID.
const OperatorChannel = "events:operators"

// BootstrapView is a domain.ProviderBootstrap as events carry it, with
// the API's encoded IDs. Like the bootstrap, it holds nothing of its join
// token.
type BootstrapView struct {
	ID                string     `json:"id"`
	ProviderAccountID string     `json:"providerAccountId"`
	PoolID            string     `json:"poolId"`
	Name              string     `json:"name"`
	ServerType        string     `json:"serverType"`
	Image             string     `json:"image"`
	State             string     `json:"state"`
	StateReason       string     `json:"stateReason,omitempty"`
	HostID            *string    `json:"hostId,omitempty"`
	Deadline          *time.Time `json:"deadline,omitempty"`
	MachineDeleted    bool       `json:"machineDeleted"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
	Version           int64      `json:"version"`
}

// BootstrapEvent is one change of one provider bootstrap: Created,
// Provisioning, Joined, Failed as it reaches each state, Updated when only
// its stateReason changed (why it is retried). Version is the
// bootstrap's: clients order and dedupe by it.
type BootstrapEvent struct {
	Kind      string        `json:"kind"`
	Type      Type          `json:"type"`
	Bootstrap BootstrapView `json:"bootstrap"`
	Version   int64         `json:"version"`
}

// ViewBootstrap returns the event view of b.
func ViewBootstrap(b domain.ProviderBootstrap) BootstrapView {
	v := BootstrapView{
		ID:                ids.Encode(ids.ProviderBootstrap, b.ID),
		ProviderAccountID: ids.Encode(ids.ProviderAccount, b.ProviderAccountID),
		PoolID:            ids.Encode(ids.Pool, b.PoolID),
		Name:              b.Name, ServerType: b.ServerType, Image: b.Image,
		State: b.State, StateReason: b.StateReason, Deadline: b.Deadline, MachineDeleted: b.MachineDeleted,
		CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, Version: b.Version,
	}
	if b.HostID != nil {
		h := ids.Encode(ids.Host, *b.HostID)
		v.HostID = &h
	}
	return v
}

// ProviderBootstrap turns an event's view back into the bootstrap it
// shows. An ID that is not of its kind is an error.
func (v BootstrapView) ProviderBootstrap() (domain.ProviderBootstrap, error) {
	b := domain.ProviderBootstrap{
		Name: v.Name, ServerType: v.ServerType, Image: v.Image, State: v.State, StateReason: v.StateReason,
		Deadline: v.Deadline, MachineDeleted: v.MachineDeleted, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, Version: v.Version,
	}
	var d idDecoder
	b.ID = d.id(ids.ProviderBootstrap, "id", v.ID)
	b.ProviderAccountID = d.id(ids.ProviderAccount, "providerAccountId", v.ProviderAccountID)
	b.PoolID = d.id(ids.Pool, "poolId", v.PoolID)
	b.HostID = d.optional(ids.Host, "hostId", v.HostID)
	if err := d.err("bootstrap", v.ID); err != nil {
		return domain.ProviderBootstrap{}, err
	}
	return b, nil
}

// BootstrapStateType is the event type of a bootstrap's state: what a
// bootstrap as it is now shows as (a subscription's current state).
func BootstrapStateType(state string) Type {
	switch state {
	case "PENDING":
		return Created
	case "FAILED":
		return Failed
	}
	return Type(state) // PROVISIONING, JOINED
}

// RecordBootstrap writes the event of a provider bootstrap's change, b as
// the change left it, into the outbox on the operators' channel, in the
// transaction of q that changed it. Whatever changes a bootstrap (its
// creation, the reconciler's steps, the gateway's join) calls it there.
func RecordBootstrap(ctx context.Context, q *sqlc.Queries, typ Type, b sqlc.ProviderBootstrap) error {
	payload, err := json.Marshal(BootstrapEvent{Kind: KindBootstrap, Type: typ, Bootstrap: ViewBootstrap(domain.ProviderBootstrapFromRow(b)), Version: b.Version})
	if err != nil {
		return fmt.Errorf("encode event of bootstrap %s: %w", b.ID, err)
	}
	channel := OperatorChannel
	if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicEvents, Key: b.ID, Channel: &channel, Payload: payload}); err != nil {
		return fmt.Errorf("enqueue event of bootstrap %s: %w", b.ID, err)
	}
	return nil
}
