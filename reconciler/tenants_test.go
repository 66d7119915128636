package reconciler_test

import (
	"context"
	"testing"
	"time"
)

// TestDeletedTenantAccountOutlivesItsServers: a deleted tenant's provider
// account is deleted by vps.tenant-deletions only once no instance of its
// pools holds a server and no orphan of it is left to sweep, as deleting a
// server needs the account. The reconciler here has no provider drivers,
// so the instance stays until the test says its server is gone.
func TestDeletedTenantAccountOutlivesItsServers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	acct := e.account("own", e.hetzner(nil), "token")
	e.providerPool("cloud", acct)
	inst := e.create("web")
	_, err := e.db.Exec(e.ctx, `INSERT INTO provider_orphans (account_id, server_id, instance_label) VALUES ($1, '42', 'x')`, acct)
	e.check(err)
	_, err = e.svc.DeleteTenant(e.ctx, e.tenant)
	e.check(err)
	e.run(nil)

	live := func() bool { return e.count("provider_accounts WHERE id = $1 AND deleted_at IS NULL", acct) == 1 }
	e.ranTwiceSince(time.Now())
	if !live() {
		t.Fatal("the account was deleted while an instance of its pool was not")
	}
	_, err = e.db.Exec(e.ctx, `UPDATE instances SET state = 'DELETED' WHERE id = $1`, inst)
	e.check(err)
	e.ranTwiceSince(time.Now())
	if !live() {
		t.Fatal("the account was deleted while an orphan of it was left to sweep")
	}
	_, err = e.db.Exec(e.ctx, `DELETE FROM provider_orphans WHERE account_id = $1`, acct)
	e.check(err)
	e.eventually(10*time.Second, "the account deleted", func() bool { return !live() })
}

// ranTwiceSince waits until vps.tenant-deletions has begun a run after the
// first that began after since, so one run began and ended after since.
func (e *env) ranTwiceSince(since time.Time) {
	e.t.Helper()
	var first time.Time
	e.eventually(10*time.Second, "vps.tenant-deletions run twice", func() bool {
		var at time.Time
		if err := e.db.QueryRow(context.Background(), `SELECT ran_at FROM periodic_runs WHERE name = 'vps.tenant-deletions'`).Scan(&at); err != nil {
			return false
		}
		if first.IsZero() && at.After(since) {
			first = at
		}
		return !first.IsZero() && at.After(first)
	})
}
