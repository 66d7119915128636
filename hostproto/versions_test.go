package hostproto_test

import (
	"reflect"
	"testing"

	"github.com/better-compute/vps/hostproto"
)

// TestAs: rendered for version 1, a spec has no env, network policy or
// power paused, and a report no stats; at the current version both are
// unchanged, and rendering never touches the original.
func TestAs(t *testing.T) {
	t.Parallel()
	spec := hostproto.NodeSpec{Protocol: hostproto.Version, Generation: 3, Instances: []hostproto.InstanceSpec{
		{ID: "a", Power: hostproto.PowerPaused, Env: map[string]string{"K": "v"}, NetworkPolicy: &hostproto.NetworkPolicy{AllowOut: []string{"10.0.0.1"}}},
		{ID: "b", Power: hostproto.PowerStopped},
	}}
	v1 := spec.As(1)
	want := hostproto.NodeSpec{Protocol: 1, Generation: 3, Instances: []hostproto.InstanceSpec{
		{ID: "a", Power: hostproto.PowerRunning}, {ID: "b", Power: hostproto.PowerStopped},
	}}
	if !reflect.DeepEqual(v1, want) {
		t.Fatalf("spec as 1 = %+v, want %+v", v1, want)
	}
	if spec.Instances[0].Env == nil || spec.Instances[0].Power != hostproto.PowerPaused {
		t.Fatalf("rendering changed the original: %+v", spec.Instances[0])
	}
	if got := spec.As(hostproto.Version); !reflect.DeepEqual(got, spec) {
		t.Fatalf("spec as %d = %+v", hostproto.Version, got)
	}

	rep := hostproto.Report{Protocol: 1, Instances: []hostproto.InstanceStatus{{ID: "a", State: hostproto.StateRunning, Stats: &hostproto.Stats{CPUTimeNs: 1}}}}
	if got := rep.As(1); got.Instances[0].Stats != nil || rep.Instances[0].Stats == nil {
		t.Fatalf("report as 1 = %+v (original %+v)", got.Instances[0], rep.Instances[0])
	}
	if got := rep.As(hostproto.Version); got.Instances[0].Stats == nil {
		t.Fatal("stats dropped at the current version")
	}
}

func TestAsBeforeCommands(t *testing.T) {
	t.Parallel()
	spec := hostproto.NodeSpec{Protocol: hostproto.Version, Instances: []hostproto.InstanceSpec{
		{ID: "a", Power: hostproto.PowerPaused, RestoreFrom: "snp_x", Env: map[string]string{"K": "v"}},
	}, Commands: []hostproto.Command{{ID: "cmd_x", Kind: hostproto.KindSnapshotPurge}}}
	v2 := spec.As(2)
	want := hostproto.NodeSpec{Protocol: 2, Instances: []hostproto.InstanceSpec{
		{ID: "a", Power: hostproto.PowerPaused, Env: map[string]string{"K": "v"}},
	}}
	if !reflect.DeepEqual(v2, want) {
		t.Fatalf("spec as 2 = %+v, want %+v", v2, want)
	}
	if spec.Instances[0].RestoreFrom == "" || len(spec.Commands) != 1 {
		t.Fatalf("rendering changed the original: %+v", spec)
	}

	rep := hostproto.Report{Protocol: 2, Generation: 7, Commands: []hostproto.CommandStatus{{ID: "cmd_x", State: hostproto.CommandRunning}},
		Instances: []hostproto.InstanceStatus{{ID: "a", State: hostproto.StateRunning, Generation: 3, Stats: &hostproto.Stats{CPUTimeNs: 1}}}}
	got := rep.As(2)
	if got.Commands != nil || got.Instances[0].Generation != 0 || got.Instances[0].Stats == nil {
		t.Fatalf("report as 2 = %+v", got)
	}
}

// TestAsBeforeXids: a report read as version 3 has no Xid events; at
// version 4 it keeps them.
func TestAsBeforeXids(t *testing.T) {
	t.Parallel()
	rep := hostproto.Report{Protocol: hostproto.XidsVersion, Generation: 2,
		Commands: []hostproto.CommandStatus{{ID: "cmd_x", State: hostproto.CommandRunning}},
		Xids:     []hostproto.Xid{{Address: "0000:3b:00.0", Code: 79}}}
	if got := rep.As(hostproto.CommandsVersion); got.Xids != nil || len(got.Commands) != 1 || len(rep.Xids) != 1 {
		t.Fatalf("report as %d = %+v (original %+v)", hostproto.CommandsVersion, got, rep)
	}
	if got := rep.As(hostproto.XidsVersion); len(got.Xids) != 1 {
		t.Fatalf("Xids dropped at version %d", hostproto.XidsVersion)
	}
}

// TestAsBeforeDeltas: rendered for version 4, a spec is whole, without
// entry generations, and a report read as version 4 is whole; at version 5
// both keep them.
func TestAsBeforeDeltas(t *testing.T) {
	t.Parallel()
	spec := hostproto.NodeSpec{Protocol: hostproto.DeltaVersion, Generation: 5, After: 4,
		Instances: []hostproto.InstanceSpec{{ID: "a", Generation: 5, RestoreFrom: "snp_x"}},
		Unchanged: []hostproto.EntryRef{{ID: "b", Generation: 2}}, Commands: []hostproto.Command{{ID: "cmd_x"}}}
	want := hostproto.NodeSpec{Protocol: hostproto.XidsVersion, Generation: 5,
		Instances: []hostproto.InstanceSpec{{ID: "a", RestoreFrom: "snp_x"}}, Commands: []hostproto.Command{{ID: "cmd_x"}}}
	if got := spec.As(hostproto.XidsVersion); !reflect.DeepEqual(got, want) {
		t.Fatalf("spec as %d = %+v, want %+v", hostproto.XidsVersion, got, want)
	}
	if spec.Instances[0].Generation != 5 {
		t.Fatal("rendering changed the original")
	}
	if got := spec.As(hostproto.DeltaVersion); !reflect.DeepEqual(got, spec) {
		t.Fatalf("spec as %d = %+v", hostproto.DeltaVersion, got)
	}
	rep := hostproto.Report{Protocol: hostproto.DeltaVersion, Partial: true, Absent: []string{"b"}}
	if got := rep.As(hostproto.XidsVersion); got.Partial || got.Absent != nil {
		t.Fatalf("report as %d = %+v", hostproto.XidsVersion, got)
	}
	if got := rep.As(hostproto.DeltaVersion); !got.Partial || len(got.Absent) != 1 {
		t.Fatalf("report as %d = %+v", hostproto.DeltaVersion, got)
	}
}

// TestAsBeforeHeartbeats: before version 6 a partial report has no stats,
// neither its own nor its statuses'; a whole one keeps its statuses'.
func TestAsBeforeHeartbeats(t *testing.T) {
	t.Parallel()
	s := &hostproto.Stats{CPUTimeNs: 1}
	partial := hostproto.Report{Protocol: hostproto.HeartbeatVersion, Partial: true,
		Instances: []hostproto.InstanceStatus{{ID: "a", State: hostproto.StateRunning, Stats: s}},
		Stats:     map[string]hostproto.Stats{"b": *s}}
	got := partial.As(hostproto.DeltaVersion)
	if got.Stats != nil || got.Instances[0].Stats != nil {
		t.Fatalf("partial report as %d = %+v", hostproto.DeltaVersion, got)
	}
	if partial.Instances[0].Stats == nil {
		t.Fatal("rendering changed the original")
	}
	if got := partial.As(hostproto.HeartbeatVersion); !reflect.DeepEqual(got, partial) {
		t.Fatalf("partial report as %d = %+v", hostproto.HeartbeatVersion, got)
	}
	whole := hostproto.Report{Protocol: hostproto.HeartbeatVersion, Instances: partial.Instances}
	if got := whole.As(hostproto.DeltaVersion); got.Instances[0].Stats == nil {
		t.Fatalf("whole report as %d lost its statuses' stats", hostproto.DeltaVersion)
	}
}
