package reconciler_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/sqlc"
)

// TestOneSweepPerInterval: reconcilers racing for an account's sweep take
// it once an interval between them, so the account is listed once however
// many reconcilers run.
func TestOneSweepPerInterval(t *testing.T) {
	t.Parallel()
	e := setup(t)
	acct, err := e.svc.CreateProviderAccount(e.ctx, control.ProviderAccountInput{Name: "burst", Provider: control.ProviderHetzner, Credentials: "token"})
	e.check(err)
	claim := func(interval float64) int64 {
		claimed, err := sqlc.New(e.db).ClaimSweep(e.ctx, sqlc.ClaimSweepParams{AccountID: acct.ID, IntervalSeconds: interval})
		e.check(err)
		return int64(len(claimed))
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { won.Add(claim(60)) })
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of 8 reconcilers took the sweep, want 1", won.Load())
	}
	if claim(60) != 0 {
		t.Fatal("the sweep was taken again within its interval")
	}
	if claim(0) != 1 {
		t.Fatal("the sweep was not taken once its interval had passed")
	}
}

// TestSweepsOnlyAccountsWithPools: an account no pool uses is never
// listed, however often the sweeps run: a member's account is not called
// until an operator makes a pool on it.
func TestSweepsOnlyAccountsWithPools(t *testing.T) {
	t.Parallel()
	e := setup(t)
	idle, busy := e.hetzner(nil), e.hetzner(nil)
	e.account("idle", idle, hetznertest.DefaultToken)
	e.providerPool("cloud", e.account("busy", busy, hetznertest.DefaultToken))
	e.reconcilers(1, withProviders)
	testenv.Eventually(t, 10*time.Second, "three sweeps of the pooled account", func() bool { return busy.sweeps() >= 3 })
	if total, _ := idle.Faults().Total(); total != 0 {
		t.Fatalf("the account without a pool got %d requests: %v", total, idle.Faults().Calls())
	}
}
