package reconciler_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/reconciler"
)

// TestDeletedTenantAccountOutlivesItsServers: deleting a tenant deletes at
// once its provider account that no pool uses; the one its pool uses is
// deleted only by a sweep that finds no server of ours left — after its
// instance's server and a stray server with our label (an orphan, deleted
// after its grace) are gone, as deleting a server needs the account. Once
// the account is deleted nothing sweeps it, so a stray left behind would
// stay at the provider.
func TestDeletedTenantAccountOutlivesItsServers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.hetzner(nil)
	acct := e.account("own", p, hetznertest.DefaultToken)
	spare := e.account("spare", p, hetznertest.DefaultToken)
	e.providerPool("cloud", acct)
	inst := e.create("web")
	e.reconcilers(1, func(c *reconciler.Config) {
		withProviders(c)
		c.OrphanGrace = 2 * time.Second
	})
	e.eventually(30*time.Second, "the instance RUNNING", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'RUNNING'", inst) == 1
	})
	_, err := p.AddServer("stray", map[string]string{"better-compute-instance": uuid.NewString()})
	e.check(err)

	_, err = e.svc.DeleteTenant(e.ctx, e.tenant)
	e.check(err)
	live := func(id uuid.UUID) bool {
		return e.count("provider_accounts WHERE id = $1 AND deleted_at IS NULL", id) == 1
	}
	if live(spare) {
		t.Error("the account no pool uses outlived its tenant's deletion")
	}
	e.eventually(30*time.Second, "the account its pool uses deleted", func() bool { return !live(acct) })
	if servers := p.Servers(); len(servers) != 0 {
		t.Errorf("servers left at the provider once the account was deleted: %+v", servers)
	}
	if e.count("instances WHERE id = $1 AND state = 'DELETED'", inst) != 1 {
		t.Error("the instance is not DELETED")
	}
}
