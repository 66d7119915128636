// Package events carries instance changes to subscribers: every committed
// change writes an event into the outbox in its own transaction, and the
// relay publishes it on the tenant's Redis channel. Delivery is at least
// once; clients order and dedupe by version.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// Type says what happened to an instance.
type Type string

// The event types.
const (
	Created Type = "CREATED"
	Updated Type = "UPDATED"
	Deleted Type = "DELETED"
)

// InstanceView is the Instance as events carry it: the API's view with
// related objects by ID. HostID is for operators; the fan-out removes it for
// members.
type InstanceView struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	TenantID      string    `json:"tenantId"`
	PoolID        string    `json:"poolId"`
	FlavorID      string    `json:"flavorId"`
	ImageID       string    `json:"imageId"`
	ImageVerified bool      `json:"imageVerified"`
	SSHKeys       []string  `json:"sshKeys"`
	DesiredState  string    `json:"desiredState"`
	State         string    `json:"state"`
	StateReason   string    `json:"stateReason"`
	Addresses     []string  `json:"addresses"`
	HostID        *string   `json:"hostId,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	Version       int64     `json:"version"`
}

// KindInstance is the Kind of instance events. Other kinds (sandboxes,
// snapshots) can travel the same channels; subscribers skip kinds they do
// not know.
const KindInstance = "instance"

// InstanceEvent is one change of one instance.
type InstanceEvent struct {
	Kind     string       `json:"kind"`
	Type     Type         `json:"type"`
	Instance InstanceView `json:"instance"`
	Version  int64        `json:"version"`
}

// View returns the event view of inst with its addresses: its leases' and
// those its provider gave its server.
func View(inst sqlc.Instance, addresses []string) InstanceView {
	v := InstanceView{
		ID:            ids.Encode(ids.Instance, inst.ID),
		Name:          inst.Name,
		TenantID:      ids.Encode(ids.Tenant, inst.TenantID),
		PoolID:        ids.Encode(ids.Pool, inst.PoolID),
		FlavorID:      ids.Encode(ids.Flavor, inst.FlavorID),
		ImageID:       ids.Encode(ids.Image, inst.ImageID),
		ImageVerified: inst.ImageVerified,
		SSHKeys:       inst.SshKeys,
		DesiredState:  inst.DesiredState,
		State:         inst.State,
		StateReason:   inst.StateReason,
		Addresses:     slices.Concat(inst.ProviderAddresses, addresses),
		CreatedAt:     inst.CreatedAt,
		UpdatedAt:     inst.UpdatedAt,
		Version:       inst.Version,
	}
	if v.Addresses == nil {
		v.Addresses = []string{}
	}
	if inst.HostID != nil {
		h := ids.Encode(ids.Host, *inst.HostID)
		v.HostID = &h
	}
	return v
}

// TenantChannel is the channel, below the Redis prefix, of a tenant's events.
func TenantChannel(tenant uuid.UUID) string {
	return "events:" + ids.Encode(ids.Tenant, tenant)
}

// HostChannel is the channel, below the Redis prefix, that wakes a host's
// NodeSpec long-poll when its spec changes.
func HostChannel(host uuid.UUID) string {
	return HostChannelPrefix + host.String()
}

// HostChannelPrefix starts every HostChannel.
const HostChannelPrefix = "host:"

// Enqueue writes the event of inst's change into the outbox under topic,
// in the transaction of q. The relay publishes it after commit, and, for
// work topics, also hands the instance to the reconciler.
func Enqueue(ctx context.Context, q *sqlc.Queries, topic string, typ Type, inst sqlc.Instance) error {
	leases, err := q.ListLiveLeases(ctx, []uuid.UUID{inst.ID})
	if err != nil {
		return fmt.Errorf("read addresses of %s: %w", inst.ID, err)
	}
	addrs := make([]string, len(leases))
	for i, l := range leases {
		addrs[i] = l.Address.String()
	}
	payload, err := json.Marshal(InstanceEvent{Kind: KindInstance, Type: typ, Instance: View(inst, addrs), Version: inst.Version})
	if err != nil {
		return fmt.Errorf("encode event of %s: %w", inst.ID, err)
	}
	channel := TenantChannel(inst.TenantID)
	if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: topic, Key: inst.ID, Channel: &channel, Payload: payload}); err != nil {
		return fmt.Errorf("enqueue event of %s: %w", inst.ID, err)
	}
	return nil
}
