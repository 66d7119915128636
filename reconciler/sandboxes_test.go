package reconciler_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/reconciler"
)

// sandboxEnv is a reconciler keeping warm pools with e.svc, every
// interval, and a template of warm count 3 on a host with room.
type sandboxEnv struct {
	*env
	template uuid.UUID
}

func setupSandboxes(t *testing.T, interval time.Duration) *sandboxEnv {
	t.Helper()
	e := &sandboxEnv{env: setup(t)}
	e.host("hv-1", 64)
	tmpl, err := e.svc.CreateSandboxTemplate(e.ctx, control.SandboxTemplateInput{TenantID: e.tenant, Name: "py",
		PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image, WarmCount: 3})
	e.check(err)
	e.template = tmpl.ID
	e.reconcilers(1, func(c *reconciler.Config) {
		c.Warm, c.SandboxInterval, c.HostSilentAfter = e.svc, interval, time.Hour
	})
	return e
}

// free counts the template's free warm instances not asked to go.
func (e *sandboxEnv) free() int {
	return e.count("instances WHERE warm_template_id = $1 AND claimed_at IS NULL AND desired_state = 'PAUSED'", e.template)
}

func (e *sandboxEnv) setWarmCount(n int) {
	e.t.Helper()
	_, err := e.svc.UpdateSandboxTemplate(e.ctx, control.SandboxTemplateUpdate{ID: e.template, WarmCount: &n})
	e.check(err)
}

// TestWarmPoolRefillsOnClaim: a claim wakes its pool's upkeep at once, not
// at the next interval (an hour here).
func TestWarmPoolRefillsOnClaim(t *testing.T) {
	t.Parallel()
	e := setupSandboxes(t, time.Hour)
	e.eventually(10*time.Second, "the pool to fill", func() bool { return e.free() == 3 })
	for range 2 {
		sbx, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: e.template})
		e.check(err)
		if sbx.StartedFrom != domain.StartedWarm {
			t.Fatalf("started %s, want WARM", sbx.StartedFrom)
		}
	}
	e.eventually(10*time.Second, "the pool to refill", func() bool { return e.free() == 3 })
	if n := e.count("instances WHERE warm_template_id = $1", e.template); n != 5 {
		t.Fatalf("%d instances made for the pool, want 5 (3, then 2 for the claimed)", n)
	}
}

// TestWarmPoolUpkeep: the upkeep fills a pool, grows and trims it when its
// warm count changes, and empties it when its template is deleted, driven
// by the wakes of those changes and of its instances' steps, not by the
// interval (an hour here).
func TestWarmPoolUpkeep(t *testing.T) {
	t.Parallel()
	e := setupSandboxes(t, time.Hour)
	steps := []struct {
		what string
		do   func()
		free int
	}{
		{"fill", func() {}, 3},
		{"grow", func() { e.setWarmCount(5) }, 5},
		{"shrink", func() { e.setWarmCount(2) }, 2},
		{"empty with its template", func() {
			_, err := e.svc.DeleteSandboxTemplate(e.ctx, e.template)
			e.check(err)
		}, 0},
	}
	for _, s := range steps {
		s.do()
		e.eventually(10*time.Second, "the pool to "+s.what, func() bool { return e.free() == s.free })
	}
	if n := e.count("instances WHERE warm_template_id = $1 AND desired_state <> 'DELETED'", e.template); n != 0 {
		t.Fatalf("%d warm instances of a deleted template not asked to go", n)
	}
}

// TestSandboxExpiry: a sandbox past its deadline ends EXPIRED within an
// interval, its instance asked to go, with an audit row; one whose
// deadline is ahead lives on.
func TestSandboxExpiry(t *testing.T) {
	t.Parallel()
	e := setupSandboxes(t, 200*time.Millisecond)
	e.setWarmCount(0)
	due, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: e.template})
	e.check(err)
	kept, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: e.template, Timeout: time.Hour})
	e.check(err)
	_, err = e.db.Exec(context.Background(), "UPDATE sandboxes SET expires_at = now() - interval '1 second' WHERE id = $1", due.ID)
	e.check(err)
	e.eventually(10*time.Second, "the sandbox to expire", func() bool {
		return e.count("sandboxes WHERE id = $1 AND ended_as = 'EXPIRED'", due.ID) == 1
	})
	if n := e.count("instances WHERE sandbox_id = $1 AND desired_state = 'DELETED'", due.ID); n != 1 {
		t.Errorf("the expired sandbox's instance is not asked to go")
	}
	if n := e.count("audit_events WHERE action = 'sandbox.expire' AND target_id = $1 AND tenant_id = $2 AND outcome = 'success'", due.ID, e.tenant); n != 1 {
		t.Errorf("%d audit rows of the expiry, want 1", n)
	}
	if n := e.count("sandbox_events WHERE sandbox_id = $1 AND type = 'EXPIRED'", due.ID); n != 1 {
		t.Errorf("%d EXPIRED events of the sandbox, want 1", n)
	}
	if n := e.count("sandboxes WHERE id = $1 AND ended_as IS NULL", kept.ID); n != 1 {
		t.Errorf("a sandbox an hour from its deadline ended")
	}
}

// TestWarmFillBesideCreates: the upkeep's AddWarmInstance and createSandbox
// of the same template and tenant run side by side without a deadlock.
// AddWarmInstance locked the template FOR UPDATE and then the tenant, while
// createSandbox holds the tenant's lock when inserting the sandbox, whose
// foreign key takes a KEY SHARE lock on the template, which FOR UPDATE
// blocks.
func TestWarmFillBesideCreates(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tmpl, err := e.svc.CreateSandboxTemplate(e.ctx, control.SandboxTemplateInput{TenantID: e.tenant, Name: "py",
		PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image})
	e.check(err)
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for range 40 {
		wg.Go(func() {
			_, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: tmpl.ID})
			errs <- err
		})
		wg.Go(func() {
			_, err := e.svc.AddWarmInstance(e.ctx, tmpl.ID)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
