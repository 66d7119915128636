package reconciler

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/ids"
)

// MaxRefusalBackoff caps how long the sweeps of an account whose calls are
// refused wait before trying again.
const MaxRefusalBackoff = 5 * time.Minute

// refusals holds back the sweeps of provider accounts whose calls are
// refused (cloud.Refused: the provider refuses their credentials, or the
// endpoint policy their endpoint), which no retry soon will change: each
// refusal in a row doubles the wait, from the sweep interval up to
// MaxRefusalBackoff. Only a refusal holds an account back: a transient
// failure (5xx, a reset connection, a timeout) leaves its next sweep on
// time, and a healthy account is never held. Updating an account (its
// credentials rotated, its settings changed) ends the wait. Each process
// keeps its own.
type refusals struct {
	mu   sync.Mutex
	byID map[uuid.UUID]*refusal
}

// refusal is an account's refusals in a row, of one version of it.
type refusal struct {
	version [sha256.Size]byte
	count   int
	until   time.Time
}

// holding reports whether the sweep of the account at version waits out a
// refusal at now.
func (rs *refusals) holding(id uuid.UUID, version [sha256.Size]byte, now time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	f, ok := rs.byID[id]
	return ok && f.version == version && now.Before(f.until)
}

// refuse records a refusal of the account at version at now, and returns
// how long its sweeps now wait and whether it is the first refusal in a
// row (of this version).
func (rs *refusals) refuse(id uuid.UUID, version [sha256.Size]byte, now time.Time, base time.Duration) (wait time.Duration, first bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	f, ok := rs.byID[id]
	if !ok || f.version != version {
		f = &refusal{version: version}
		if rs.byID == nil {
			rs.byID = map[uuid.UUID]*refusal{}
		}
		rs.byID[id] = f
	}
	f.count++
	wait = refusalBackoff(base, f.count)
	f.until = now.Add(wait)
	return wait, f.count == 1
}

// clear forgets the account's refusals, reporting whether it had any.
func (rs *refusals) clear(id uuid.UUID) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, ok := rs.byID[id]
	delete(rs.byID, id)
	return ok
}

// refusalBackoff is the wait after the nth refusal in a row: base, doubled
// for each refusal after the first, at most MaxRefusalBackoff.
func refusalBackoff(base time.Duration, n int) time.Duration {
	wait := base
	for i := 1; i < n && wait < MaxRefusalBackoff; i++ {
		wait *= 2
	}
	return min(wait, MaxRefusalBackoff)
}

// sweepDone logs how an account's sweep went and keeps its refusals: a
// refusal is logged once (warn) until the account is accepted again
// (info), not at every sweep.
func (r *Reconciler) sweepDone(ctx context.Context, id uuid.UUID, version [sha256.Size]byte, err error) {
	switch {
	case err == nil:
		if r.refusals.clear(id) {
			r.log.InfoContext(ctx, "provider account accepted again: its sweeps run as usual", "account", ids.Log(ids.ProviderAccount, id))
		}
	case cloud.KindOf(err) == cloud.Refused:
		if wait, first := r.refusals.refuse(id, version, time.Now(), r.cfg.SweepInterval); first {
			r.log.WarnContext(ctx, "provider account refused: its sweeps back off, up to "+MaxRefusalBackoff.String()+", until it is accepted or updated",
				"account", ids.Log(ids.ProviderAccount, id), "retry_in", wait, "err", err)
		}
	case ctx.Err() == nil:
		r.log.WarnContext(ctx, "sweep provider account", "account", ids.Log(ids.ProviderAccount, id), "err", err)
	}
}
