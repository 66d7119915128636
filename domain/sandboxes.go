package domain

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// SandboxTemplate says what each sandbox made from it runs, and how many
// instances of it wait warm.
type SandboxTemplate struct {
	ID uuid.UUID
	// TenantID owns the template and its warm instances; nil for an
	// operator's public template of no tenant.
	TenantID *uuid.UUID
	// Public templates are visible to every tenant.
	Public   bool
	Name     string
	PoolID   uuid.UUID
	FlavorID uuid.UUID
	ImageID  uuid.UUID
	// SSHKeys are authorized_keys lines.
	SSHKeys []string
	// EnvNames are the names of its environment variables; the values are
	// sealed and never shown.
	EnvNames []string
	Network  NetworkPolicy
	// DefaultTimeout is a sandbox's when it asks for none; MaxTimeout
	// bounds what a sandbox may ask for.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// WarmCount is how many instances of it wait booted and paused.
	WarmCount int
	// InstanceVersion increases with every change to what a booted
	// instance holds (flavor, image, keys, env, network).
	InstanceVersion int64
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// Deleted is when it was deleted; nil while it lives.
	DeletedAt *time.Time
	// Version increases with every change.
	Version int64
}

// NetworkPolicy is the egress a template's instances are allowed, as the
// host enforces it outside the guest: the internet or nothing, except the
// addresses and IPv4 CIDRs of DenyOut and AllowOut; AllowOut wins over
// DenyOut. It is stored as this JSON on templates and instances.
type NetworkPolicy struct {
	AllowInternetAccess bool     `json:"allowInternetAccess"`
	AllowOut            []string `json:"allowOut"`
	DenyOut             []string `json:"denyOut"`
}

// DefaultNetworkPolicy is a template's when it names none: the internet.
func DefaultNetworkPolicy() NetworkPolicy {
	return NetworkPolicy{AllowInternetAccess: true, AllowOut: []string{}, DenyOut: []string{}}
}

// ParseNetworkPolicy decodes a stored policy; empty is the default.
func ParseNetworkPolicy(raw []byte) NetworkPolicy {
	p := DefaultNetworkPolicy()
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &p) // stored by control, from this type
	}
	if p.AllowOut == nil {
		p.AllowOut = []string{}
	}
	if p.DenyOut == nil {
		p.DenyOut = []string{}
	}
	return p
}

// SandboxTemplateFromRow maps a sandbox_templates row.
func SandboxTemplateFromRow(r sqlc.SandboxTemplate) SandboxTemplate {
	return SandboxTemplate{
		ID: r.ID, TenantID: r.TenantID, Public: r.Public, Name: r.Name, PoolID: r.PoolID, FlavorID: r.FlavorID,
		ImageID: r.ImageID, SSHKeys: r.SshKeys, EnvNames: r.EnvNames, Network: ParseNetworkPolicy(r.Network),
		DefaultTimeout: time.Duration(r.DefaultTimeoutS) * time.Second, MaxTimeout: time.Duration(r.MaxTimeoutS) * time.Second,
		WarmCount: int(r.WarmCount), InstanceVersion: r.InstanceVersion, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		DeletedAt: r.DeletedAt, Version: r.Version,
	}
}

// How a sandbox's instance started.
const (
	// StartedWarm: it claimed a warm instance of its template.
	StartedWarm = "WARM"
	// StartedCold: it booted an instance of its own.
	StartedCold = "COLD"
)

// The states of a sandbox. Until it ends, its state is its instance's,
// as the database's sandbox_state derives it; then it is how it ended.
const (
	SandboxStarting = "STARTING"
	SandboxRunning  = "RUNNING"
	SandboxPaused   = "PAUSED"
	SandboxError    = "ERROR"
	SandboxLost     = "LOST"
	SandboxExpired  = "EXPIRED"
	SandboxDeleted  = "DELETED"
)

// Sandbox is a short-lived instance made from a template, which expires
// by itself.
type Sandbox struct {
	ID         uuid.UUID
	TenantID   uuid.UUID
	TemplateID uuid.UUID
	// TemplateVersion is the template's instance version its instance was
	// made of.
	TemplateVersion int64
	InstanceID      uuid.UUID
	// FromSnapshot is the snapshot it was restored from; nil for one made
	// from its template's image.
	FromSnapshot *uuid.UUID
	// State is one of the Sandbox… states.
	State string
	// StartedFrom is StartedWarm or StartedCold.
	StartedFrom string
	Metadata    map[string]string
	// ExpiresAt is when it is deleted unless its timeout is set again.
	ExpiresAt time.Time
	// EndedAt is when it expired or was deleted; nil while it lives.
	EndedAt   *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// Version increases with every change of the sandbox's own.
	Version int64
	// Instance is its instance as the mutation answering with the sandbox
	// read it, in its transaction; nil when not read with it.
	Instance *Instance
}

// Ended reports whether the sandbox expired or was deleted.
func (s Sandbox) Ended() bool { return s.EndedAt != nil }

// SandboxFromRow maps a sandbox_views row: a sandbox with its instance.
func SandboxFromRow(r sqlc.SandboxView) Sandbox {
	md := map[string]string{}
	_ = json.Unmarshal(r.Metadata, &md) // stored by control, a JSON object of strings
	return Sandbox{
		ID: r.ID, TenantID: r.TenantID, TemplateID: r.TemplateID, TemplateVersion: r.TemplateVersion,
		InstanceID: r.InstanceID, FromSnapshot: r.FromSnapshot, State: r.State, StartedFrom: r.StartedFrom, Metadata: md, ExpiresAt: r.ExpiresAt,
		EndedAt: r.EndedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version,
	}
}
