// Package events carries instance changes to subscribers: every committed
// change writes an event into the outbox in its own transaction, and the
// relay publishes it on the tenant's Redis channel. Delivery is at least
// once; clients order and dedupe by version.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
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

// InstanceView is a domain.Instance as events carry it, with the API's
// encoded IDs (View and InstanceView.Instance convert). HostID is for
// operators; the fan-out removes it for members.
type InstanceView struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	TenantID      string   `json:"tenantId"`
	PoolID        string   `json:"poolId"`
	FlavorID      string   `json:"flavorId"`
	ImageID       string   `json:"imageId"`
	ImageVerified bool     `json:"imageVerified"`
	SSHKeys       []string `json:"sshKeys"`
	DesiredState  string   `json:"desiredState"`
	State         string   `json:"state"`
	StateReason   string   `json:"stateReason"`
	Addresses     []string `json:"addresses"`
	HostID        *string  `json:"hostId,omitempty"`
	// HostCertified and HostCertValidBefore: whether its host is
	// certified, until when.
	HostCertified       bool       `json:"hostCertified"`
	HostCertValidBefore *time.Time `json:"hostCertValidBefore,omitempty"`
	CreatedAt           time.Time  `json:"createdAt"`
	UpdatedAt           time.Time  `json:"updatedAt"`
	Version             int64      `json:"version"`
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

// View returns the event view of inst.
func View(inst domain.Instance) InstanceView {
	v := InstanceView{
		ID:                  ids.Encode(ids.Instance, inst.ID),
		Name:                inst.Name,
		TenantID:            ids.Encode(ids.Tenant, inst.TenantID),
		PoolID:              ids.Encode(ids.Pool, inst.PoolID),
		FlavorID:            ids.Encode(ids.Flavor, inst.FlavorID),
		ImageID:             ids.Encode(ids.Image, inst.ImageID),
		ImageVerified:       inst.ImageVerified,
		SSHKeys:             inst.SSHKeys,
		DesiredState:        inst.DesiredState,
		State:               inst.State,
		StateReason:         inst.StateReason,
		Addresses:           inst.Addresses,
		HostCertified:       inst.HostCertified,
		HostCertValidBefore: inst.HostCertValidBefore,
		CreatedAt:           inst.CreatedAt,
		UpdatedAt:           inst.UpdatedAt,
		Version:             inst.Version,
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

// Instance turns an event's view back into the Instance it shows. An ID
// that is not of its kind is an error.
func (v InstanceView) Instance() (domain.Instance, error) {
	inst := domain.Instance{
		Name:                v.Name,
		ImageVerified:       v.ImageVerified,
		SSHKeys:             v.SSHKeys,
		DesiredState:        v.DesiredState,
		State:               v.State,
		StateReason:         v.StateReason,
		Addresses:           v.Addresses,
		HostCertified:       v.HostCertified,
		HostCertValidBefore: v.HostCertValidBefore,
		CreatedAt:           v.CreatedAt,
		UpdatedAt:           v.UpdatedAt,
		Version:             v.Version,
	}
	var d idDecoder
	inst.ID = d.id(ids.Instance, "id", v.ID)
	inst.TenantID = d.id(ids.Tenant, "tenantId", v.TenantID)
	inst.PoolID = d.id(ids.Pool, "poolId", v.PoolID)
	inst.FlavorID = d.id(ids.Flavor, "flavorId", v.FlavorID)
	inst.ImageID = d.id(ids.Image, "imageId", v.ImageID)
	inst.HostID = d.optional(ids.Host, "hostId", v.HostID)
	if err := d.err("instance", v.ID); err != nil {
		return domain.Instance{}, err
	}
	return inst, nil
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
// work topics, also hands the instance to the reconciler. The change of an
// instance of a sandbox may be a step of the sandbox's life, which it
// records too (SandboxStep).
func Enqueue(ctx context.Context, q *sqlc.Queries, topic string, typ Type, inst sqlc.Instance) error {
	leases, err := q.ListLiveLeases(ctx, []uuid.UUID{inst.ID})
	if err != nil {
		return fmt.Errorf("read addresses of %s: %w", inst.ID, err)
	}
	return EnqueueLeased(ctx, q, topic, typ, inst, leases)
}

// EnqueueLeased is Enqueue for a caller that knows inst's live leases in
// q's transaction (the reconciler, which leases and releases them), saving
// their read.
func EnqueueLeased(ctx context.Context, q *sqlc.Queries, topic string, typ Type, inst sqlc.Instance, leases []sqlc.IpLease) error {
	payload, err := instancePayload(typ, inst, leases)
	if err != nil {
		return err
	}
	channel := TenantChannel(inst.TenantID)
	if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: topic, Key: inst.ID, Channel: &channel, Payload: payload}); err != nil {
		return fmt.Errorf("enqueue event of %s: %w", inst.ID, err)
	}
	return SandboxStep(ctx, q, inst)
}

func instancePayload(typ Type, inst sqlc.Instance, leases []sqlc.IpLease) ([]byte, error) {
	payload, err := json.Marshal(InstanceEvent{Kind: KindInstance, Type: typ, Instance: View(domain.InstanceFromRow(inst, leases)), Version: inst.Version})
	if err != nil {
		return nil, fmt.Errorf("encode event of %s: %w", inst.ID, err)
	}
	return payload, nil
}
