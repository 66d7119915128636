package domain

import (
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// Instance is a virtual machine: what its tenant asked for and what it is.
type Instance struct {
	ID            uuid.UUID
	Name          string
	TenantID      uuid.UUID
	PoolID        uuid.UUID
	FlavorID      uuid.UUID
	ImageID       uuid.UUID
	ImageVerified bool
	// SSHKeys are authorized_keys lines.
	SSHKeys []string
	// DesiredState is what was asked for (a lifecycle.Desired); State is
	// what the instance is (a lifecycle.State), and StateReason why.
	DesiredState string
	State        string
	StateReason  string
	// Addresses are those its provider gave its server, then those it
	// leases from its pool's IP ranges.
	Addresses []string
	// HostID is the host it is placed on; nil when unplaced or at a provider.
	HostID *uuid.UUID
	// HostCertified says the host it runs on proved itself with a valid
	// certificate when it was placed there and in its last report;
	// HostCertValidBefore is when that certificate expires (nil when not
	// certified). A lapsed certificate makes it not certified.
	HostCertified       bool
	HostCertValidBefore *time.Time
	// SandboxID is the sandbox it runs, if any; WarmTemplateID the
	// sandbox template whose warm pool it was made for, if any.
	SandboxID      *uuid.UUID
	WarmTemplateID *uuid.UUID
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Version increases with every change.
	Version int64
}

// InstanceFromRow maps an instances row and the live leases of the instance.
func InstanceFromRow(r sqlc.Instance, leases []sqlc.IpLease) Instance {
	addrs := make([]string, 0, len(r.ProviderAddresses)+len(leases))
	addrs = append(addrs, r.ProviderAddresses...)
	for _, l := range leases {
		addrs = append(addrs, l.Address.String())
	}
	return Instance{
		ID: r.ID, Name: r.Name, TenantID: r.TenantID, PoolID: r.PoolID, FlavorID: r.FlavorID, ImageID: r.ImageID,
		ImageVerified: r.ImageVerified, SSHKeys: r.SshKeys, DesiredState: r.DesiredState, State: r.State,
		StateReason: r.StateReason, Addresses: addrs, HostID: r.HostID,
		HostCertified: r.HostCertified, HostCertValidBefore: r.HostCertValidBefore, SandboxID: r.SandboxID, WarmTemplateID: r.WarmTemplateID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Version: r.Version,
	}
}

// StateChange is one change of an instance's state, as recorded with it.
type StateChange struct {
	// From is the state before; nil when the instance was created.
	From *string
	To   string
	At   time.Time
}
