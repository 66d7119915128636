package reconciler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
)

// sandboxInstances makes a sandbox template in the env's pool, a sandbox
// of it and a warm instance of it, and returns their two instances: both
// need host protocol 2.
func (e *env) sandboxInstances() (sandbox, warm uuid.UUID) {
	e.t.Helper()
	// A warm count of 1, which the warm instance added here fills: one
	// added to a template of count 0 is trimmed by the pool's upkeep.
	tmpl, err := e.svc.CreateSandboxTemplate(e.ctx, control.SandboxTemplateInput{TenantID: e.tenant, Name: "py", PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image, WarmCount: 1})
	e.check(err)
	sbx, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: tmpl.ID})
	e.check(err)
	w, err := e.svc.AddWarmInstance(e.ctx, tmpl.ID)
	e.check(err)
	return sbx.InstanceID, w.ID
}

// hostOf names the host an instance is placed on, "" for none.
func (e *env) hostOf(id uuid.UUID) string {
	e.t.Helper()
	var name *string
	e.check(e.db.QueryRow(context.Background(), "SELECT h.name FROM instances i LEFT JOIN hosts h ON h.id = i.host_id WHERE i.id = $1", id).Scan(&name))
	if name == nil {
		return ""
	}
	return *name
}

// TestPlacementByProtocol: a sandbox's instance and a warm instance need
// host protocol 2, so with a host of version 1 and one of version 2 they
// land on the second, though spread placement prefers the first; plain
// instances land there.
func TestPlacementByProtocol(t *testing.T) {
	t.Parallel()
	e := setup(t)
	v1, v2 := int16(1), int16(2)
	// Spread placement prefers "old", ten times the size: plain instances
	// all go there.
	e.hostSpeaking("old", 100, &v1)
	e.hostSpeaking("new", 10, &v2)
	// Made before any reconciler runs, so the pool's upkeep finds its warm
	// count met.
	for i := range 4 {
		e.create(fmt.Sprintf("vm-%d", i))
	}
	sbx, warm := e.sandboxInstances()
	e.reconcilers(1, patient)
	e.eventually(30*time.Second, "6 placed", func() bool { return e.count("instances WHERE state = 'PROVISIONING'") == 6 })
	if got := e.perHost(); got["old"] != 4 {
		t.Fatalf("instances per host %v, want the 4 plain ones on old", got)
	}
	t.Cleanup(func() {
		if t.Failed() {
			rows, _ := e.db.Query(context.Background(), "SELECT id, state, desired_state, state_reason FROM instances WHERE id = ANY($1)", []uuid.UUID{sbx, warm})
			for rows.Next() {
				var id uuid.UUID
				var s, d, r string
				rows.Scan(&id, &s, &d, &r)
				t.Logf("%s %s desired %s: %s", id, s, d, r)
			}
		}
	})
	e.eventually(30*time.Second, "the sandbox instances placed", func() bool { return e.hostOf(sbx) != "" && e.hostOf(warm) != "" })
	if s, w := e.hostOf(sbx), e.hostOf(warm); s != "new" || w != "new" {
		t.Fatalf("sandbox instance on %q, warm instance on %q; want both on new", s, w)
	}
}

// TestPlacementWaitsForProtocol: with only a host of version 1 and one
// that never said its version (counted as 1), a sandbox's instance is not
// placed: it stays PENDING with the reason, as when no host has room,
// while a plain instance is placed.
func TestPlacementWaitsForProtocol(t *testing.T) {
	t.Parallel()
	e := setup(t)
	v1 := int16(1)
	e.hostSpeaking("old", 10, &v1)
	e.hostSpeaking("quiet", 10, nil)
	e.reconcilers(1, patient)
	sbx, _ := e.sandboxInstances()
	plain := e.create("vm")
	want := "no live host in pool fra1 has room for 1 vCPUs, 1024 MiB, 10 GiB and speaks host protocol 2 or later (older: old, quiet)"
	e.eventually(30*time.Second, "the plain instance placed and the sandbox's waiting", func() bool {
		return e.hostOf(plain) != "" && e.count("instances WHERE id = $1 AND state = 'PENDING' AND state_reason = $2", sbx, want) == 1
	})
	if n := e.count("allocations WHERE instance_id = $1", sbx); n != 0 {
		t.Fatalf("the sandbox's instance has %d allocations", n)
	}
}
