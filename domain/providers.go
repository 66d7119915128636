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
