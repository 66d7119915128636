package domain

import (
	"net/netip"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// Pool is where instances are placed: on adopted hosts (class vps-host), at a
// cloud provider (class provider), or by another module's class.
type Pool struct {
	ID    uuid.UUID
	Name  string
	Class string
	// TenantID dedicates the pool to one tenant; nil shares it.
	TenantID *uuid.UUID
	// Placement is spread or pack.
	Placement            string
	SingleTenant         bool
	RequireVerifiedImage bool
	// ProviderAccountID is the account a provider pool creates its
	// instances with; nil for other classes.
	ProviderAccountID *uuid.UUID
	// SharedSnapshotStore says every host of the (hosted) pool mounts the
	// same snapshot store: a restore may run on any of them.
	SharedSnapshotStore bool
	// Runtime is the runtime a hosted pool's hosts run (vps.Runtimes); nil
	// for other classes.
	Runtime *string
	// RequireCertifiedHosts says the (hosted) pool places only on hosts
	// whose certificate outlives the reconciler's certified margin.
	RequireCertifiedHosts bool
	CreatedAt             time.Time
}

// PoolFromRow maps a pools row.
func PoolFromRow(r sqlc.Pool) Pool {
	return Pool{
		ID: r.ID, Name: r.Name, Class: r.Class, TenantID: r.TenantID, Placement: r.Placement,
		SingleTenant: r.SingleTenant, RequireVerifiedImage: r.RequireVerifiedImage,
		ProviderAccountID: r.ProviderAccountID, SharedSnapshotStore: r.SharedSnapshotStore, Runtime: r.Runtime,
		RequireCertifiedHosts: r.RequireCertifiedHosts, CreatedAt: r.CreatedAt,
	}
}

// IPPool is an IPv4 range of a pool that instances lease addresses from.
type IPPool struct {
	ID         uuid.UUID
	PoolID     uuid.UUID
	CIDR       netip.Prefix
	Gateway    netip.Addr
	RangeStart netip.Addr
	RangeEnd   netip.Addr
	DNS        []netip.Addr
}

// RangeSize counts the IPv4 addresses from start to end inclusive.
func RangeSize(start, end netip.Addr) int {
	s, e := start.As4(), end.As4()
	a := uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3])
	b := uint32(e[0])<<24 | uint32(e[1])<<16 | uint32(e[2])<<8 | uint32(e[3])
	return int(b-a) + 1
}

// IPPoolFromRow maps an ip_pools row.
func IPPoolFromRow(r sqlc.IpPool) IPPool {
	return IPPool{ID: r.ID, PoolID: r.PoolID, CIDR: r.Cidr, Gateway: r.Gateway, RangeStart: r.RangeStart, RangeEnd: r.RangeEnd, DNS: r.Dns}
}

// Host is a hypervisor adopted into a hosted pool, without its credential.
type Host struct {
	ID     uuid.UUID
	PoolID uuid.UUID
	Name   string
	// Draining hosts get nothing new placed on them.
	Draining bool
	// LastSeenAt is when it last reported; nil before its first report.
	LastSeenAt *time.Time
	// SpecGeneration is the generation of its NodeSpec; ReportedGeneration
	// the one it last reported converging to.
	SpecGeneration     int64
	ReportedGeneration int64
	// ProtocolVersion is the host protocol version its daemon last said it
	// speaks; nil before it said.
	ProtocolVersion *int
	// Runtime is the runtime its daemon last said it runs; nil before it
	// said (a daemon that does not name it).
	Runtime   *string
	CreatedAt time.Time
	// CertValidBefore is when its newest certificate not revoked expires;
	// nil when it has none.
	CertValidBefore *time.Time
	// BearerCredential: it has a bearer credential, the fallback by which
	// it proves itself without a certificate.
	BearerCredential bool
}

// HostFromRow maps a hosts row.
func HostFromRow(r sqlc.Host) Host {
	h := Host{
		ID: r.ID, PoolID: r.PoolID, Name: r.Name, Draining: r.Draining, LastSeenAt: r.LastSeenAt,
		SpecGeneration: r.SpecGeneration, ReportedGeneration: r.ReportedGeneration, Runtime: r.Runtime, CreatedAt: r.CreatedAt,
		CertValidBefore: r.CertNotAfter, BearerCredential: r.CredentialHash != nil,
	}
	if r.Protocol != nil {
		v := int(*r.Protocol)
		h.ProtocolVersion = &v
	}
	return h
}

// Certified reports whether h holds a certificate valid at now.
func (h Host) Certified(now time.Time) bool {
	return h.CertValidBefore != nil && now.Before(*h.CertValidBefore)
}

// HostCapacity is what a host can give to instances.
type HostCapacity struct {
	Vcpus    int32
	MemoryMB int64
	DiskGB   int64
}

// HostCapacityFromRow maps a host_capacity row.
func HostCapacityFromRow(r sqlc.HostCapacity) HostCapacity {
	return HostCapacity{Vcpus: r.Vcpus, MemoryMB: r.MemoryMb, DiskGB: r.DiskGb}
}

// HostAllocation is what live instances hold on a host.
type HostAllocation struct {
	Instances int32
	Vcpus     int64
	MemoryMB  int64
	DiskGB    int64
	GPUs      int32
}

// HostAllocationFromRow maps a host's summed allocations.
func HostAllocationFromRow(r sqlc.HostAllocationsRow) HostAllocation {
	return HostAllocation{Instances: r.Instances, Vcpus: r.Vcpus, MemoryMB: r.MemoryMb, DiskGB: r.DiskGb, GPUs: r.Gpus}
}

// GPU is a GPU device of a host.
type GPU struct {
	// Address is the PCI address, such as 0000:65:00.0.
	Address string
	Vendor  string
	Model   string
	// Health is what its Xid events say of it.
	Health GPUHealth
}

// GPUFromRow maps a host_gpus row.
func GPUFromRow(r sqlc.HostGpu) GPU {
	g := GPU{Address: r.Address, Vendor: r.Vendor, Model: r.Model}
	g.Health.UnhealthySince, g.Health.LastXidAt = r.UnhealthySince, r.LastXidAt
	if r.HealthReason != nil {
		g.Health.Reason = *r.HealthReason
	}
	if r.LastXid != nil {
		g.Health.LastXid = int(*r.LastXid)
	}
	return g
}
