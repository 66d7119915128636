package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/better-compute/vps/ids"
)

const (
	createSnapshot = `mutation($in: CreateSandboxSnapshotInput!) { createSandboxSnapshot(input: $in) { sandboxSnapshot {
		id name state stateReason sizeBytes sha256 settledAt sandbox { id } } } }`
	deleteSnapshot = `mutation($in: SandboxSnapshotIdInput!) { deleteSandboxSnapshot(input: $in) { sandboxSnapshot { id } } }`
	restore        = `mutation($in: CreateSandboxInput!) { createSandbox(input: $in) { sandbox {
		id startedFrom template { id } fromSnapshot { id } instance { id } } } }`
)

// snapshotView is a SandboxSnapshot as the tests read it.
type snapshotView struct {
	ID, Name, State, StateReason string
	SizeBytes                    *int64
	SHA256                       *string
	Sandbox                      struct{ ID string }
}

// snapshotWorld is a tenant's world with a template and a host in its pool.
type snapshotWorld struct {
	world
	template string
	host     string
}

func (e *env) snapshotWorld(name string) snapshotWorld {
	e.t.Helper()
	w := snapshotWorld{world: e.world(name)}
	w.template = e.template(w.world, "py", nil).ID
	w.host = e.id(e.operator, `mutation($p: ID!, $n: String!) { createHost(input: {poolId: $p, name: $n}) { host { id } } }`,
		map[string]any{"p": w.pool, "n": name + "-hv"}, "createHost", "host", "id")
	return w
}

// running creates a sandbox in w whose instance runs on w's host, as the
// reconciler and the host would leave it.
func (e *env) running(w snapshotWorld) sandboxView {
	e.t.Helper()
	sbx := e.sandbox(w.member, map[string]any{"templateId": w.template})
	if _, err := e.db.Exec(context.Background(), "UPDATE instances SET state = 'RUNNING', host_id = $2 WHERE id = $1",
		decodeTB(e.t, ids.Instance, sbx.Instance.ID), decodeTB(e.t, ids.Host, w.host)); err != nil {
		e.t.Fatal(err)
	}
	return sbx
}

// snapshot takes a snapshot of a sandbox as token.
func (e *env) snapshot(token, sandbox, name string) snapshotView {
	e.t.Helper()
	var out struct {
		CreateSandboxSnapshot struct{ SandboxSnapshot snapshotView }
	}
	e.must(token, createSnapshot, map[string]any{"in": map[string]any{"sandboxId": sandbox, "name": name}}, &out)
	return out.CreateSandboxSnapshot.SandboxSnapshot
}

// settleSnapshot settles a snapshot as the reconciler does from its
// host's report: READY with size bytes, or FAILED when size < 0.
func (e *env) settleSnapshot(id string, size int64) {
	e.t.Helper()
	q := "UPDATE sandbox_snapshots SET state = 'READY', size_bytes = $2, sha256 = $3, settled_at = now() WHERE id = $1"
	args := []any{decodeTB(e.t, ids.SandboxSnapshot, id), size, strings.Repeat("c", 64)}
	if size < 0 {
		q, args = "UPDATE sandbox_snapshots SET state = 'FAILED', state_reason = 'disk full', settled_at = now() WHERE id = $1", args[:1]
	}
	if _, err := e.db.Exec(context.Background(), q, args...); err != nil {
		e.t.Fatal(err)
	}
}

func decodeTB(t testing.TB, k ids.Kind, s string) any {
	t.Helper()
	id, ok := ids.Decode(k, s)
	if !ok {
		t.Fatalf("not a %s ID: %s", k, s)
	}
	return id
}

// TestSandboxSnapshots: a RUNNING sandbox's snapshot is recorded PENDING
// with its instance and host, wakes vps.snapshots and is audited; it is
// read by ID, as a node and in lists; once READY a sandbox restored from
// it boots cold (though a warm instance waits) with restore_from set; it
// outlives its sandbox; deleted, it is hidden at once and wakes the
// reconciler to purge it.
func TestSandboxSnapshots(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.snapshotWorld("alpha")
	sbx := e.running(w)
	snap := e.snapshot(w.member, sbx.ID, "deps-installed")
	if snap.State != "PENDING" || snap.Name != "deps-installed" || snap.Sandbox.ID != sbx.ID || snap.SizeBytes != nil || snap.SHA256 != nil {
		t.Fatalf("created %+v", snap)
	}
	id := decodeTB(t, ids.SandboxSnapshot, snap.ID)
	if n := e.count("sandbox_snapshots", "id = $1 AND principal_instance_id = $2 AND host_id = $3 AND command_id IS NULL",
		id, decodeTB(t, ids.Instance, sbx.Instance.ID), decodeTB(t, ids.Host, w.host)); n != 1 {
		t.Fatalf("the snapshot's row does not keep its instance and host")
	}
	if n := e.count("outbox", "topic = 'vps.snapshots' AND key = $1", id); n != 1 {
		t.Errorf("%d wakes of vps.snapshots, want 1", n)
	}
	if n := e.count("audit_events", "action = 'sandboxSnapshot.create' AND target_id = $1 AND outcome = 'success'", id); n != 1 {
		t.Errorf("%d audit rows of the create", n)
	}

	t.Run("reads", func(t *testing.T) {
		var out struct {
			SandboxSnapshot  snapshotView
			Node             struct{ ID string }
			SandboxSnapshots struct {
				TotalCount int
				Nodes      []snapshotView
			}
			Ready struct{ TotalCount int }
		}
		e.must(w.member, `query($id: ID!, $s: ID!) { sandboxSnapshot(id: $id) { id state } node(id: $id) { id }
			sandboxSnapshots(filter: {sandboxId: $s, state: PENDING}) { totalCount nodes { id } }
			ready: sandboxSnapshots(filter: {state: READY}) { totalCount } }`, map[string]any{"id": snap.ID, "s": sbx.ID}, &out)
		if out.SandboxSnapshot.ID != snap.ID || out.Node.ID != snap.ID || out.SandboxSnapshots.TotalCount != 1 ||
			out.SandboxSnapshots.Nodes[0].ID != snap.ID || out.Ready.TotalCount != 0 {
			t.Fatalf("read %+v", out)
		}
	})

	e.settleSnapshot(snap.ID, 4096)
	e.warm(w.template, 1)
	var restored struct {
		CreateSandbox struct {
			Sandbox struct {
				ID, StartedFrom string
				Template        struct{ ID string }
				FromSnapshot    *struct{ ID string }
				Instance        struct{ ID string }
			}
		}
	}
	e.must(w.member, restore, map[string]any{"in": map[string]any{"fromSnapshot": snap.ID}}, &restored)
	r := restored.CreateSandbox.Sandbox
	if r.StartedFrom != "COLD" || r.Template.ID != w.template || r.FromSnapshot == nil || r.FromSnapshot.ID != snap.ID {
		t.Fatalf("restored %+v", r)
	}
	if n := e.count("instances", "id = $1 AND restore_from = $2", decodeTB(t, ids.Instance, r.Instance.ID), id); n != 1 {
		t.Errorf("the restored sandbox's instance does not restore from the snapshot")
	}
	if n := e.count("audit_events", "action = 'sandbox.create' AND details->>'fromSnapshot' = $1", snap.ID); n != 1 {
		t.Errorf("the restore's audit row does not name the snapshot")
	}

	e.must(w.member, `mutation($id: ID!) { deleteSandbox(input: {id: $id}) { sandbox { id } } }`, map[string]any{"id": sbx.ID}, nil)
	if n := e.count("sandbox_snapshots", "id = $1 AND deleted_at IS NULL", id); n != 1 {
		t.Fatalf("deleting the sandbox deleted its snapshot")
	}

	e.must(w.member, deleteSnapshot, map[string]any{"in": map[string]any{"id": snap.ID}}, nil)
	if r := e.do(w.member, `query($id: ID!) { sandboxSnapshot(id: $id) { id } }`, map[string]any{"id": snap.ID}); r.code() != "NOT_FOUND" {
		t.Errorf("a deleted snapshot read: %+v", r.Errors)
	}
	var list struct{ SandboxSnapshots struct{ TotalCount int } }
	e.must(w.member, `{ sandboxSnapshots { totalCount } }`, nil, &list)
	if list.SandboxSnapshots.TotalCount != 0 {
		t.Errorf("a deleted snapshot listed")
	}
	if n := e.count("outbox", "topic = 'vps.snapshots' AND key = $1", id); n != 2 {
		t.Errorf("%d wakes of vps.snapshots after the delete, want 2", n)
	}
	if n := e.count("audit_events", "action = 'sandboxSnapshot.delete' AND target_id = $1 AND outcome = 'success'", id); n != 1 {
		t.Errorf("%d audit rows of the delete", n)
	}
	var still struct {
		Sandbox struct{ FromSnapshot *struct{ ID string } }
	}
	e.must(w.member, `query($id: ID!) { sandbox(id: $id) { fromSnapshot { id } } }`, map[string]any{"id": r.ID}, &still)
	if still.Sandbox.FromSnapshot != nil {
		t.Errorf("a restored sandbox shows its deleted snapshot")
	}
}

// TestSandboxSnapshotBadInput: each refused snapshot, restore or delete
// answers its code and writes nothing beyond its failed-attempt audit row.
func TestSandboxSnapshotBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.snapshotWorld("alpha")
	b := e.snapshotWorld("beta")
	running := e.running(a)
	starting := e.sandbox(a.member, map[string]any{"templateId": a.template})
	taken := e.snapshot(a.member, running.ID, "taken")
	ready := e.snapshot(a.member, running.ID, "ready")
	e.settleSnapshot(ready.ID, 100)
	failed := e.snapshot(a.member, running.ID, "failed")
	e.settleSnapshot(failed.ID, -1)
	deleted := e.snapshot(a.member, running.ID, "deleted")
	e.settleSnapshot(deleted.ID, 100)
	e.must(a.member, deleteSnapshot, map[string]any{"in": map[string]any{"id": deleted.ID}}, nil)
	purged := e.snapshot(a.member, running.ID, "purged")
	e.settleSnapshot(purged.ID, 100)
	e.must(a.member, deleteSnapshot, map[string]any{"in": map[string]any{"id": purged.ID}}, nil)
	if _, err := e.db.Exec(context.Background(), "UPDATE sandbox_snapshots SET purged = true WHERE id = $1", decodeTB(t, ids.SandboxSnapshot, purged.ID)); err != nil {
		t.Fatal(err)
	}
	theirs := e.snapshot(b.member, e.running(b).ID, "theirs")
	e.settleSnapshot(theirs.ID, 100)

	// Quota: c holds one snapshot of its limit of one; d's READY ones
	// hold every byte it may keep.
	c, d := e.snapshotWorld("gamma"), e.snapshotWorld("delta")
	cRunning, dRunning := e.running(c), e.running(d)
	e.snapshot(c.member, cRunning.ID, "one")
	e.settleSnapshot(e.snapshot(d.member, dRunning.ID, "full").ID, 1000)
	setQuota := `mutation($t: ID!, $n: Int, $b: Int64) { setQuota(input: {tenantId: $t, snapshots: $n, snapshotBytes: $b}) { tenant { id } } }`
	e.must(e.operator, setQuota, map[string]any{"t": c.tenant, "n": 1}, nil)
	e.must(e.operator, setQuota, map[string]any{"t": d.tenant, "b": 1000}, nil)

	snapIn := func(sbx, name string) map[string]any { return map[string]any{"sandboxId": sbx, "name": name} }
	cases := []struct {
		name, token, mutation string
		in                    map[string]any
		action, code, field   string
	}{
		{"a sandbox not RUNNING", a.member, createSnapshot, snapIn(starting.ID, "s1"), "sandboxSnapshot.create", "FAILED_PRECONDITION", ""},
		{"another tenant's sandbox", b.member, createSnapshot, snapIn(running.ID, "s1"), "sandboxSnapshot.create", "NOT_FOUND", "sandboxId"},
		{"a malformed sandbox ID", a.member, createSnapshot, snapIn("sbx_nope", "s1"), "sandboxSnapshot.create", "INVALID_INPUT", "sandboxId"},
		{"a name that is not a name", a.member, createSnapshot, snapIn(running.ID, "Not A Name"), "sandboxSnapshot.create", "INVALID_INPUT", "name"},
		{"a name taken", a.member, createSnapshot, snapIn(running.ID, "taken"), "sandboxSnapshot.create", "CONFLICT", "name"},
		{"over the snapshot count", c.member, createSnapshot, snapIn(cRunning.ID, "two"), "sandboxSnapshot.create", "QUOTA_EXCEEDED", ""},
		{"over the snapshot bytes", d.member, createSnapshot, snapIn(dRunning.ID, "more"), "sandboxSnapshot.create", "QUOTA_EXCEEDED", ""},
		{"restore from a PENDING snapshot", a.member, restore, map[string]any{"fromSnapshot": taken.ID}, "sandbox.create", "FAILED_PRECONDITION", "fromSnapshot"},
		{"restore from a FAILED snapshot", a.member, restore, map[string]any{"fromSnapshot": failed.ID}, "sandbox.create", "FAILED_PRECONDITION", "fromSnapshot"},
		{"restore from a deleted snapshot", a.member, restore, map[string]any{"fromSnapshot": deleted.ID}, "sandbox.create", "NOT_FOUND", "fromSnapshot"},
		{"restore from a purged snapshot", a.member, restore, map[string]any{"fromSnapshot": purged.ID}, "sandbox.create", "NOT_FOUND", "fromSnapshot"},
		{"restore from another tenant's snapshot", a.member, restore, map[string]any{"fromSnapshot": theirs.ID}, "sandbox.create", "NOT_FOUND", "fromSnapshot"},
		{"restore naming another template", a.member, restore, map[string]any{"fromSnapshot": ready.ID, "templateId": e.template(a.world, "js", nil).ID},
			"sandbox.create", "INVALID_INPUT", "templateId"},
		{"neither template nor snapshot", a.member, restore, map[string]any{}, "sandbox.create", "INVALID_INPUT", "templateId"},
		{"a malformed snapshot ID", a.member, restore, map[string]any{"fromSnapshot": "snp_nope"}, "sandbox.create", "INVALID_INPUT", "fromSnapshot"},
		{"delete another tenant's snapshot", b.member, deleteSnapshot, map[string]any{"id": ready.ID}, "sandboxSnapshot.delete", "NOT_FOUND", "id"},
		{"delete a deleted snapshot", a.member, deleteSnapshot, map[string]any{"id": deleted.ID}, "sandboxSnapshot.delete", "NOT_FOUND", "id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counts := func() string {
				return fmt.Sprint(e.count("sandbox_snapshots", "true"), e.count("sandbox_snapshots", "deleted_at IS NOT NULL"),
					e.count("sandboxes", "true"), e.count("instances", "true"), e.count("outbox", "true"), e.count("audit_events", "outcome = 'success'"))
			}
			before, failures := counts(), e.count("audit_events", "outcome = 'failure'")
			r := e.do(c.token, c.mutation, map[string]any{"in": c.in})
			if r.code() != c.code || r.Errors[0].Extensions.Field != c.field {
				t.Fatalf("errors = %+v, want code %s field %q", r.Errors, c.code, c.field)
			}
			if after := counts(); after != before {
				t.Errorf("snapshots, deleted ones, sandboxes, instances, outbox rows, successes went from %s to %s", before, after)
			}
			if n := e.count("audit_events", "outcome = 'failure' AND action = $1 AND error_code = $2", c.action, c.code); n == 0 {
				t.Errorf("no failed-attempt audit row %s %s", c.action, c.code)
			}
			if n := e.count("audit_events", "outcome = 'failure'"); n != failures+1 {
				t.Errorf("failure audit rows %d → %d, want one more", failures, n)
			}
		})
	}
}

// TestSnapshotQuota: setQuota sets the snapshot limits (negative ones
// refused), and Tenant.quota shows them with the usage: live snapshots,
// and the bytes of the READY ones.
func TestSnapshotQuota(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.snapshotWorld("alpha")
	sbx := e.running(w)
	e.settleSnapshot(e.snapshot(w.member, sbx.ID, "a").ID, 3<<30)
	e.snapshot(w.member, sbx.ID, "b")
	gone := e.snapshot(w.member, sbx.ID, "c")
	e.settleSnapshot(gone.ID, 100)
	e.must(w.member, deleteSnapshot, map[string]any{"in": map[string]any{"id": gone.ID}}, nil)

	e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, snapshots: 10, snapshotBytes: 10737418240}) { tenant { id } } }`,
		map[string]any{"t": w.tenant}, nil)
	var out struct {
		Node struct {
			Quota struct {
				Snapshots     *int
				SnapshotBytes *int64
				Usage         struct {
					Snapshots     int
					SnapshotBytes int64
				}
			}
		}
	}
	e.must(w.member, `query($t: ID!) { node(id: $t) { ... on Tenant { quota { snapshots snapshotBytes usage { snapshots snapshotBytes } } } } }`,
		map[string]any{"t": w.tenant}, &out)
	q := out.Node.Quota
	if q.Snapshots == nil || *q.Snapshots != 10 || q.SnapshotBytes == nil || *q.SnapshotBytes != 10<<30 ||
		q.Usage.Snapshots != 2 || q.Usage.SnapshotBytes != 3<<30 {
		t.Fatalf("quota %+v", q)
	}
	for _, field := range []string{"snapshots", "snapshotBytes"} {
		r := e.do(e.operator, fmt.Sprintf(`mutation($t: ID!) { setQuota(input: {tenantId: $t, %s: -1}) { tenant { id } } }`, field), map[string]any{"t": w.tenant})
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != field {
			t.Errorf("a negative %s: %+v", field, r.Errors)
		}
	}
}

// TestDeleteTenantSnapshots: deleting a tenant deletes its snapshots and
// wakes the reconciler to purge each; another tenant's stay.
func TestDeleteTenantSnapshots(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w, other := e.snapshotWorld("alpha"), e.snapshotWorld("beta")
	sbx := e.running(w)
	for _, name := range []string{"a", "b"} {
		e.snapshot(w.member, sbx.ID, name)
	}
	e.snapshot(other.member, e.running(other).ID, "kept")
	e.must(e.operator, `mutation($t: ID!) { deleteTenant(input: {id: $t}) { tenant { id } } }`, map[string]any{"t": w.tenant}, nil)
	tenant := decodeTB(t, ids.Tenant, w.tenant)
	if n := e.count("sandbox_snapshots", "tenant_id = $1 AND deleted_at IS NOT NULL", tenant); n != 2 {
		t.Errorf("%d of the tenant's 2 snapshots deleted", n)
	}
	if n := e.count("outbox o JOIN sandbox_snapshots s ON s.id = o.key", "o.topic = 'vps.snapshots' AND s.tenant_id = $1", tenant); n != 4 {
		t.Errorf("%d wakes of the tenant's snapshots, want 4 (2 creates, 2 deletes)", n)
	}
	if n := e.count("sandbox_snapshots", "tenant_id <> $1 AND deleted_at IS NULL", tenant); n != 1 {
		t.Errorf("another tenant's snapshot was deleted")
	}
}

// TestRestoreFlavor: a sandbox restored from a snapshot boots with the
// size of the instance the snapshot was taken of (its flavor, vCPUs,
// memory and disk), though its template's flavor changed since to one of
// a smaller disk, and counts that size against the quota: a restore that
// fits under it is made where the template's new flavor would not fit.
func TestRestoreFlavor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.snapshotWorld("alpha") // the template's flavor: 1 vCPU, 1024 MiB, 10 GiB
	snap := e.snapshot(w.member, e.running(w).ID, "taken-small")
	e.settleSnapshot(snap.ID, 4096)

	smaller := e.id(e.operator, `mutation { createFlavor(input: {name: "alpha-wide", vcpus: 2, memoryMb: 2048, diskGb: 5}) { flavor { id } } }`,
		nil, "createFlavor", "flavor", "id")
	e.must(w.member, updateTemplate, map[string]any{"in": map[string]any{"id": w.template, "flavorId": smaller}}, nil)
	size := func(inst string) (flavor string, vcpus, memoryMB, diskGB int) {
		t.Helper()
		var out struct {
			Node struct{ Flavor struct{ ID string } }
		}
		e.must(w.member, `query($id: ID!) { node(id: $id) { ... on Instance { flavor { id } } } }`, map[string]any{"id": inst}, &out)
		if err := e.db.QueryRow(context.Background(), "SELECT vcpus, memory_mb, disk_gb FROM instances WHERE id = $1",
			decodeTB(t, ids.Instance, inst)).Scan(&vcpus, &memoryMB, &diskGB); err != nil {
			t.Fatal(err)
		}
		return out.Node.Flavor.ID, vcpus, memoryMB, diskGB
	}
	if f, v, m, d := size(e.sandbox(w.member, map[string]any{"templateId": w.template}).Instance.ID); f != smaller || v != 2 || m != 2048 || d != 5 {
		t.Fatalf("a sandbox of the changed template has flavor %s, %d vCPUs, %d MiB, %d GiB; want its new one", f, v, m, d)
	}

	// 3 vCPUs used (the snapshot's sandbox, 1, and the one above, 2): one
	// more fits, two do not.
	e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, vcpus: 4}) { tenant { id } } }`, map[string]any{"t": w.tenant}, nil)
	var restored struct {
		CreateSandbox struct {
			Sandbox struct{ Instance struct{ ID string } }
		}
	}
	e.must(w.member, restore, map[string]any{"in": map[string]any{"fromSnapshot": snap.ID}}, &restored)
	if f, v, m, d := size(restored.CreateSandbox.Sandbox.Instance.ID); f != w.flavor || v != 1 || m != 1024 || d != 10 {
		t.Errorf("restored with flavor %s, %d vCPUs, %d MiB, %d GiB; want the snapshot's instance's (%s, 1, 1024, 10)", f, v, m, d, w.flavor)
	}
}
