package domain

import (
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// The states of a sandbox snapshot.
const (
	// SnapshotPending: its host has not reported taking it yet.
	SnapshotPending = "PENDING"
	// SnapshotReady: taken, with its size and sha256; sandboxes may be
	// restored from it.
	SnapshotReady = "READY"
	// SnapshotFailed: not taken; StateReason says why.
	SnapshotFailed = "FAILED"
)

// SandboxSnapshot is a running sandbox's disk, taken on its host, from
// which new sandboxes boot. Its files live on the host that took it.
type SandboxSnapshot struct {
	ID         uuid.UUID
	TenantID   uuid.UUID
	SandboxID  uuid.UUID
	TemplateID uuid.UUID
	Name       string
	// State is one of the Snapshot… states.
	State       string
	StateReason string
	// HostID is the host that holds its files.
	HostID *uuid.UUID
	// PrincipalInstanceID is the instance it was taken from.
	PrincipalInstanceID *uuid.UUID
	// SizeBytes and SHA256 are set once READY.
	SizeBytes *int64
	SHA256    *string
	// HostCertified says the host that took it was certified when it
	// became READY (its instance's HostCertified then);
	// HostCertValidBefore is until when (nil when not certified).
	HostCertified       bool
	HostCertValidBefore *time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
	// SettledAt is when it became READY or FAILED.
	SettledAt *time.Time
	// DeletedAt is when it was deleted (hidden from the API); Purged says
	// its host confirmed its files gone.
	DeletedAt *time.Time
	Purged    bool
	Version   int64
}

// SandboxSnapshotFromRow maps a sandbox_snapshots row.
func SandboxSnapshotFromRow(r sqlc.SandboxSnapshot) SandboxSnapshot {
	return SandboxSnapshot{
		ID: r.ID, TenantID: r.TenantID, SandboxID: r.SandboxID, TemplateID: r.TemplateID, Name: r.Name,
		State: r.State, StateReason: r.StateReason, HostID: r.HostID, PrincipalInstanceID: r.PrincipalInstanceID,
		SizeBytes: r.SizeBytes, SHA256: r.Sha256, HostCertified: r.HostCertified, HostCertValidBefore: r.HostCertValidBefore, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		SettledAt: r.SettledAt, DeletedAt: r.DeletedAt, Purged: r.Purged, Version: r.Version,
	}
}
