package domain

import (
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// Tenant owns instances, pools, images and provider accounts, and its
// members' tokens.
type Tenant struct {
	ID        uuid.UUID
	Name      string
	CreatedAt time.Time
}

// TenantFromRow maps a tenants row.
func TenantFromRow(r sqlc.Tenant) Tenant {
	return Tenant{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}
}

// Principal is who acts: an operator, or a member of one tenant.
type Principal struct {
	ID   uuid.UUID
	Name string
	// Role is operator or member (iam.Role).
	Role string
	// TenantID is a member's tenant; nil for operators.
	TenantID *uuid.UUID
}

// PrincipalFromRow maps a principals row.
func PrincipalFromRow(r sqlc.Principal) Principal {
	return Principal{ID: r.ID, Name: r.Name, Role: r.Role, TenantID: r.TenantID}
}

// APIToken is a principal's bearer token, without its hash.
type APIToken struct {
	ID   uuid.UUID
	Name string
	// Role and TenantID are its principal's.
	Role      string
	TenantID  *uuid.UUID
	CreatedAt time.Time
	// ExpiresAt is nil for a token that never expires.
	ExpiresAt *time.Time
	RevokedAt *time.Time
}

// APITokenFromRow maps a token read with its principal's role and tenant.
func APITokenFromRow(r sqlc.GetAPITokenRow) APIToken {
	return APIToken{
		ID: r.ID, Name: r.Name, Role: r.Role, TenantID: r.TenantID,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt,
	}
}

// Quota is a tenant's limits; nil is unlimited.
type Quota struct {
	Instances *int32
	Vcpus     *int32
	MemoryMB  *int64
	GPUs      *int32
	// Snapshots bounds the live sandbox snapshots, SnapshotBytes the bytes
	// of the READY ones.
	Snapshots     *int32
	SnapshotBytes *int64
}

// QuotaFromRow maps a quotas row.
func QuotaFromRow(r sqlc.Quota) Quota {
	return Quota{Instances: r.MaxInstances, Vcpus: r.MaxVcpus, MemoryMB: r.MaxMemoryMb, GPUs: r.MaxGpus,
		Snapshots: r.MaxSnapshots, SnapshotBytes: r.MaxSnapshotBytes}
}

// Usage is what a tenant's live instances hold against its quota.
type Usage struct {
	Instances int32
	Vcpus     int32
	MemoryMB  int64
	GPUs      int32
	// Snapshots counts the live sandbox snapshots, SnapshotBytes the bytes
	// of the READY ones.
	Snapshots     int32
	SnapshotBytes int64
}

// UsageFromRow maps a tenant's counted usage.
func UsageFromRow(r sqlc.TenantUsageRow) Usage {
	return Usage{Instances: r.Instances, Vcpus: r.Vcpus, MemoryMB: r.MemoryMb, GPUs: r.Gpus}
}
