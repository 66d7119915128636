package reconciler

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// account is a provider account's driver and its pace: every call to the
// provider goes through call, which holds back while the provider asked us
// to wait and, once the budget its headers state runs low, spaces calls at
// the rate the budget refills.
type account struct {
	id       uuid.UUID
	tenantID *uuid.UUID
	provider string
	driver   cloud.Driver
	// metrics count its calls.
	metrics *metrics
	// version is what the driver was made from; an account updated since
	// (its token rotated) gets a new driver.
	version [sha256.Size]byte

	mu          sync.Mutex
	pausedUntil time.Time
	lastCall    time.Time
	// inflight calls have taken from the budget the provider last stated.
	inflight int
	// changingUntil: a start or stop asked of one of its servers may still
	// be under way (sweep.go, awaitChange).
	changingUntil time.Time
}

// accounts caches one account per provider account, so its pace is shared
// by every worker of the process.
type accounts struct {
	mu   sync.Mutex
	byID map[uuid.UUID]*account
}

// account returns the account of row, making its driver the first time and
// whenever the account's credentials or settings changed.
func (r *Reconciler) account(row sqlc.ProviderAccount) (*account, error) {
	version := accountVersion(row)
	r.accounts.mu.Lock()
	defer r.accounts.mu.Unlock()
	if a, ok := r.accounts.byID[row.ID]; ok && a.version == version {
		return a, nil
	}
	if r.cfg.Drivers == nil || r.cfg.Sealer == nil {
		return nil, fmt.Errorf("provider account %s: this reconciler has no provider drivers configured", ids.Log(ids.ProviderAccount, row.ID))
	}
	creds, err := r.cfg.Sealer.Open(row.CredentialsSealed, row.ID[:])
	if err != nil {
		return nil, fmt.Errorf("open credentials of provider account %s: %w", ids.Log(ids.ProviderAccount, row.ID), err)
	}
	d, err := r.cfg.Drivers(cloud.Account{ID: row.ID.String(), Shared: row.TenantID == nil, Provider: row.Provider,
		Credentials: string(creds), Settings: row.Settings})
	if err != nil {
		return nil, fmt.Errorf("make driver of provider account %s: %w", ids.Log(ids.ProviderAccount, row.ID), err)
	}
	a := &account{id: row.ID, tenantID: row.TenantID, provider: row.Provider, driver: d, version: version, metrics: r.metrics}
	if r.accounts.byID == nil {
		r.accounts.byID = map[uuid.UUID]*account{}
	}
	r.accounts.byID[row.ID] = a
	return a, nil
}

// accountVersion tells the versions of an account apart: it changes with
// its credentials and settings.
func accountVersion(row sqlc.ProviderAccount) [sha256.Size]byte {
	return sha256.Sum256(append(append([]byte{}, row.CredentialsSealed...), row.Settings...))
}

// cachedAccount returns the account of id if its driver is made.
func (r *Reconciler) cachedAccount(id uuid.UUID) (*account, bool) {
	r.accounts.mu.Lock()
	defer r.accounts.mu.Unlock()
	a, ok := r.accounts.byID[id]
	return a, ok
}

// cachedAccounts returns the accounts whose drivers are made.
func (r *Reconciler) cachedAccounts() []*account {
	r.accounts.mu.Lock()
	defer r.accounts.mu.Unlock()
	out := make([]*account, 0, len(r.accounts.byID))
	for _, a := range r.accounts.byID {
		out = append(out, a)
	}
	return out
}

// call makes one call to the provider, or refuses it with a RateLimited
// error saying how long to wait, without waiting: callers hold row locks.
func (a *account) call(ctx context.Context, what string, fn func(context.Context) error) error {
	if wait := a.hold(); wait > 0 {
		a.metrics.calls.WithLabelValues(ids.Encode(ids.ProviderAccount, a.id), a.provider, "paced").Inc()
		return fmt.Errorf("%s: %w", what, &cloud.Error{Kind: cloud.RateLimited, RetryAfter: wait,
			Message: fmt.Sprintf("pacing calls to %s to stay within its rate limit", a.provider)})
	}
	err := fn(ctx)
	a.metrics.called(a, err)
	a.mu.Lock()
	a.inflight--
	a.mu.Unlock()
	if d := cloud.RetryAfter(err); d > 0 {
		a.pause(d)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// hold returns how long the next call must wait, and otherwise counts it.
func (a *account) hold() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if now.Before(a.pausedUntil) {
		return a.pausedUntil.Sub(now)
	}
	b := a.driver.Budget()
	b.Remaining -= a.inflight
	if gap := spacing(b, now); gap > 0 && now.Before(a.lastCall.Add(gap)) {
		return a.lastCall.Add(gap).Sub(now)
	}
	a.lastCall = now
	a.inflight++
	return 0
}

func (a *account) pause(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if until := time.Now().Add(d); until.After(a.pausedUntil) {
		a.pausedUntil = until
	}
}

// spacing is the least time between calls the budget allows: none while
// more than a tenth of it remains, then the time it takes to refill one
// request, so calls never outrun the provider's refill.
func spacing(b cloud.Budget, now time.Time) time.Duration {
	if b.Limit <= 0 || b.Remaining > b.Limit/10 || !b.Reset.After(now) {
		return 0
	}
	return b.Reset.Sub(now) / time.Duration(b.Limit-max(b.Remaining, 0))
}
