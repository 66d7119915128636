package domain

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// Flavor is a size of instance.
type Flavor struct {
	ID       uuid.UUID
	Name     string
	Vcpus    int32
	MemoryMB int64
	DiskGB   int32
	// GPUModel is set exactly when GPUCount is positive.
	GPUModel *string
	GPUCount int32
	// ProviderTypes is a JSON object of its server type at each provider,
	// by provider kind: {"hetzner": "cx22"}.
	ProviderTypes json.RawMessage
}

// FlavorFromRow maps a flavors row.
func FlavorFromRow(r sqlc.Flavor) Flavor {
	return Flavor{
		ID: r.ID, Name: r.Name, Vcpus: r.Vcpus, MemoryMB: r.MemoryMb, DiskGB: r.DiskGb,
		GPUModel: r.GpuModel, GPUCount: r.GpuCount, ProviderTypes: r.ProviderTypes,
	}
}

// Image is a registered disk image instances boot from.
type Image struct {
	ID   uuid.UUID
	Name string
	// SourceURL is where hosts fetch it: http, https or file.
	SourceURL string
	SHA256    string
	// Format is raw, qcow2 or iso.
	Format string
	// Visibility is public, or tenant: then TenantID owns it.
	Visibility string
	TenantID   *uuid.UUID
	Verified   bool
	// ProviderImages is a JSON object of its image or template at each
	// provider, by provider kind: {"hetzner": "debian-12"}.
	ProviderImages json.RawMessage
	CreatedAt      time.Time
}

// ImageFromRow maps an images row.
func ImageFromRow(r sqlc.Image) Image {
	return Image{
		ID: r.ID, Name: r.Name, SourceURL: r.Source, SHA256: r.Sha256, Format: r.Format, Visibility: r.Visibility,
		TenantID: r.TenantID, Verified: r.Verified, ProviderImages: r.ProviderImages, CreatedAt: r.CreatedAt,
	}
}
