package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// buildSpec reads a host's NodeSpec in one snapshot, so its generation
// matches its contents (instances and open commands), and renders it for
// the version the host speaks (an older one gets no commands). A
// host holding an instance that needs a newer version gets a *behindError.
//
// For a host of hostproto.DeltaVersion that holds the spec of generation
// after (> 0) it is a delta: only the entries that changed after it are
// read in full (their rows, leases, devices, sealed user data and env);
// the others are listed by ID and entry generation, read from one query
// that reads nothing else, so a change costs what changed, not what the
// host holds.
func (g *Gateway) buildSpec(ctx context.Context, host sqlc.Host, version int, after int64) (hostproto.NodeSpec, error) {
	if version < hostproto.DeltaVersion {
		after = 0
	}
	behind := &behindError{host: host.Name, version: version}
	spec := hostproto.NodeSpec{Protocol: hostproto.Version, HostID: ids.Encode(ids.Host, host.ID), After: after, Instances: []hostproto.InstanceSpec{}}
	err := pgx.BeginTxFunc(ctx, g.cfg.DB, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		var err error
		if spec.Generation, err = q.HostGeneration(ctx, host.ID); err != nil {
			return fmt.Errorf("read generation: %w", err)
		}
		if after > 0 {
			if spec.Unchanged, err = unchangedEntries(ctx, q, host.ID, after); err != nil {
				return err
			}
		}
		insts, err := q.SpecInstances(ctx, sqlc.SpecInstancesParams{Host: &host.ID, After: after})
		if err != nil {
			return fmt.Errorf("read instances: %w", err)
		}
		leases, err := q.SpecLeases(ctx, sqlc.SpecLeasesParams{Host: &host.ID, After: after})
		if err != nil {
			return fmt.Errorf("read leases: %w", err)
		}
		devices, err := q.SpecDevices(ctx, sqlc.SpecDevicesParams{Host: host.ID, After: after})
		if err != nil {
			return fmt.Errorf("read devices: %w", err)
		}
		nets := map[uuid.UUID]*hostproto.Network{}
		for _, l := range leases {
			nets[l.InstanceID] = network(l)
		}
		if spec.Commands, err = specCommands(ctx, q, host.ID); err != nil {
			return err
		}
		gpus := map[uuid.UUID][]hostproto.Device{}
		for _, d := range devices {
			gpus[d.InstanceID] = append(gpus[d.InstanceID], hostproto.Device{Address: d.Address})
		}
		for _, inst := range insts {
			if need := domain.HostProtocol(inst); need > version {
				behind.need = max(behind.need, need)
				behind.instances = append(behind.instances, ids.Encode(ids.Instance, inst.ID))
			}
			is, err := g.instanceSpec(inst)
			if err != nil {
				return err
			}
			is.Network, is.GPUs = nets[inst.ID], gpus[inst.ID]
			spec.Instances = append(spec.Instances, is)
		}
		return nil
	})
	if err != nil {
		return spec, fmt.Errorf("spec of host %s: %w", host.Name, err)
	}
	if len(behind.instances) > 0 {
		return spec, behind
	}
	return spec.As(version), nil
}

// unchangedEntries lists the entries of a host's spec that have not
// changed since generation after, by ID and entry generation.
func unchangedEntries(ctx context.Context, q *sqlc.Queries, host uuid.UUID, after int64) ([]hostproto.EntryRef, error) {
	entries, err := q.SpecEntries(ctx, &host)
	if err != nil {
		return nil, fmt.Errorf("read entries: %w", err)
	}
	var out []hostproto.EntryRef
	for _, e := range entries {
		if e.SpecGeneration <= after {
			out = append(out, hostproto.EntryRef{ID: ids.Encode(ids.Instance, e.ID), Generation: e.SpecGeneration})
		}
	}
	return out, nil
}

// instanceSpec is an instance's entry of its host's NodeSpec, with its user
// data and env opened for the host and its network policy (an instance of
// a sandbox template's) to enforce.
func (g *Gateway) instanceSpec(inst sqlc.Instance) (hostproto.InstanceSpec, error) {
	is := hostproto.InstanceSpec{
		ID:         ids.Encode(ids.Instance, inst.ID),
		Generation: inst.SpecGeneration,
		Name:       inst.Name,
		Power:      hostproto.Power(*inst.SpecPower),
		Vcpus:      int(inst.Vcpus),
		MemoryMB:   inst.MemoryMb,
		DiskGB:     int64(inst.DiskGb),
		Image:      hostproto.Image{URL: inst.ImageUrl, SHA256: inst.ImageSha256, Format: inst.ImageFormat},
		SSHKeys:    inst.SshKeys,
	}
	if inst.RestoreFrom != nil {
		is.RestoreFrom = ids.Encode(ids.SandboxSnapshot, *inst.RestoreFrom)
	}
	if inst.UserDataSealed != nil {
		ud, err := g.cfg.Sealer.Open(inst.UserDataSealed, inst.ID[:])
		if err != nil {
			return is, fmt.Errorf("open user data of %s: %w", is.ID, err)
		}
		is.UserData = string(ud)
	}
	if inst.EnvSealed != nil {
		plain, err := g.cfg.Sealer.Open(inst.EnvSealed, inst.ID[:])
		if err != nil {
			return is, fmt.Errorf("open env of %s: %w", is.ID, err)
		}
		if err := json.Unmarshal(plain, &is.Env); err != nil {
			return is, fmt.Errorf("decode env of %s: %w", is.ID, err)
		}
	}
	if inst.NetworkPolicy != nil {
		p := domain.ParseNetworkPolicy(inst.NetworkPolicy)
		is.NetworkPolicy = &hostproto.NetworkPolicy{AllowInternetAccess: p.AllowInternetAccess, AllowOut: p.AllowOut, DenyOut: p.DenyOut}
	}
	return is, nil
}

func network(l sqlc.SpecLeasesRow) *hostproto.Network {
	dns := make([]string, len(l.Dns))
	for i, d := range l.Dns {
		dns[i] = d.String()
	}
	return &hostproto.Network{
		MAC:     l.Mac,
		Address: netip.PrefixFrom(l.Address, l.Cidr.Bits()).String(),
		Gateway: l.Gateway.String(),
		DNS:     dns,
	}
}
