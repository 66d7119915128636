package domain

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// ProviderAccount is an account at a cloud provider. Its credentials stay
// sealed in the row.
type ProviderAccount struct {
	ID uuid.UUID
	// TenantID owns it; nil for an account operators share.
	TenantID *uuid.UUID
	// Provider is the provider kind: hetzner or proxmox.
	Provider string
	Name     string
	// Settings is the JSON object of the provider's settings.
	Settings  json.RawMessage
	CreatedAt time.Time
}

// ProviderAccountFromRow maps a provider_accounts row.
func ProviderAccountFromRow(r sqlc.ProviderAccount) ProviderAccount {
	return ProviderAccount{ID: r.ID, TenantID: r.TenantID, Provider: r.Provider, Name: r.Name, Settings: r.Settings, CreatedAt: r.CreatedAt}
}

// ProviderBootstrap is a machine rented through an operator's provider
// account on its way to becoming a host of a hosted pool. Its join token
// is never part of it.
type ProviderBootstrap struct {
	ID                uuid.UUID
	ProviderAccountID uuid.UUID
	PoolID            uuid.UUID
	// Name is the machine's and then its host's name.
	Name       string
	ServerType string
	Image      string
	// State is PENDING, PROVISIONING, JOINED or FAILED.
	State       string
	StateReason string
	// HostID is the host it became, once JOINED.
	HostID *uuid.UUID
	// Deadline is when a machine that has not joined is deleted.
	Deadline *time.Time
	// MachineDeleted: the machine of a FAILED bootstrap is gone.
	MachineDeleted bool
	Version        int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ProviderBootstrapFromRow maps a provider_bootstraps row, leaving its
// token's hash behind.
func ProviderBootstrapFromRow(r sqlc.ProviderBootstrap) ProviderBootstrap {
	b := ProviderBootstrap{ID: r.ID, ProviderAccountID: r.ProviderAccountID, PoolID: r.PoolID, Name: r.Name,
		ServerType: r.ServerType, Image: r.Image, State: r.State, HostID: r.HostID, Deadline: r.Deadline,
		MachineDeleted: r.MachineDeleted, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.StateReason != nil {
		b.StateReason = *r.StateReason
	}
	return b
}
