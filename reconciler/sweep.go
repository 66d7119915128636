package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// ActDeleteOrphan is the audited deletion of a server with our label that
// no live instance owns.
const ActDeleteOrphan = "providerAccount.deleteOrphan"

// sweepDue lists the servers of each provider account whose sweep is due
// and that no other reconciler has taken: it records what it sees on the
// instances, wakes those whose server changed or vanished, and deletes
// orphans. An account whose calls were refused waits (refusals).
func (r *Reconciler) sweepDue(ctx context.Context) error {
	q := sqlc.New(r.db)
	rows, err := q.ProviderAccountsToSweep(ctx)
	if err != nil {
		return fmt.Errorf("list provider accounts: %w", err)
	}
	now := time.Now()
	for _, row := range rows {
		version := accountVersion(row)
		if r.refusals.holding(row.ID, version, now) {
			continue
		}
		interval := r.cfg.SweepInterval
		if a, ok := r.cachedAccount(row.ID); ok {
			interval = sweepInterval(interval, a.driver.Budget(), a.changing(now))
		}
		claimed, err := q.ClaimSweep(ctx, sqlc.ClaimSweepParams{AccountID: row.ID, IntervalSeconds: interval.Seconds()})
		if err != nil {
			return fmt.Errorf("claim sweep of %s: %w", ids.Log(ids.ProviderAccount, row.ID), err)
		}
		if len(claimed) == 0 {
			continue
		}
		a, err := r.account(row)
		if err == nil {
			err = r.sweepAccount(ctx, a)
		}
		if err == nil && a.tenantID != nil {
			err = r.finishDeletedTenantAccount(ctx, a, claimed[0])
		}
		r.sweepDone(ctx, row.ID, version, err)
	}
	return nil
}

// sweepInterval stretches the interval fivefold while less than half the
// rate-limit budget remains, leaving the rest to the instances' own calls;
// otherwise, while a start or stop may be under way (changing), it is a
// quarter: the sweep is what sees those finish.
func sweepInterval(base time.Duration, b cloud.Budget, changing bool) time.Duration {
	switch {
	case b.Limit > 0 && b.Remaining < b.Limit/2:
		return 5 * base
	case changing:
		return base / 4
	}
	return base
}

// awaitChange notes that a start or stop was asked of one of the account's
// servers and not waited for: for the next interval its sweeps come four
// times as often, so that the change is seen about as soon as the
// driver's own polls used to see it, with one list call for all the
// account's servers instead of polls for each.
func (a *account) awaitChange(interval time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.changingUntil = time.Now().Add(interval)
}

// changing reports whether a change awaitChange noted may be under way.
func (a *account) changing(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Before(a.changingUntil)
}

// sweepAccount makes one list call and acts on what it returns.
func (r *Reconciler) sweepAccount(ctx context.Context, a *account) error {
	listedAt := time.Now()
	var servers []cloud.Server
	err := a.call(ctx, "list servers", func(ctx context.Context) (err error) {
		servers, err = a.driver.List(ctx)
		return err
	})
	if err != nil {
		return err
	}
	q := sqlc.New(r.db)
	insts, err := q.ProviderInstances(ctx, &a.id)
	if err != nil {
		return fmt.Errorf("list instances: %w", err)
	}
	mine := make(map[string]sqlc.ProviderInstancesRow, len(insts))
	for _, in := range insts {
		mine[in.ID.String()] = in
	}
	var orphans, others []cloud.Server
	listed := map[uuid.UUID]bool{}
	for _, srv := range servers {
		in, ok := mine[srv.InstanceID]
		switch {
		case !ok:
			others = append(others, srv) // perhaps another account's instance
		case in.ProviderServerID == nil:
			r.queue.add(instanceRequest(in.ID)) // its create's commit was lost: it adopts it
		case *in.ProviderServerID != srv.ID:
			orphans = append(orphans, srv) // a second server for one instance
		default:
			listed[in.ID] = true
			if err := r.observe(ctx, q, in.ID, srv.ID, srv.Status, srv.Addresses, listedAt); err != nil {
				return err
			}
		}
	}
	for _, in := range insts {
		if in.ProviderServerID == nil || listed[in.ID] || !in.ProviderServerAt.Before(listedAt) {
			continue
		}
		status, addrs, err := r.confirmAbsent(ctx, a, in.ID, *in.ProviderServerID)
		if err != nil {
			return err
		}
		if err := r.observe(ctx, q, in.ID, *in.ProviderServerID, status, addrs, listedAt); err != nil {
			return err
		}
	}
	unowned, err := r.unowned(ctx, q, others)
	if err != nil {
		return err
	}
	return r.sweepOrphans(ctx, q, a, append(orphans, unowned...))
}

// confirmAbsent asks for the server of an instance that a listing missed
// before it is called gone: a listing of several pages misses servers that
// exist when one is deleted between two pages (the next page shifts by
// one). It returns statusAbsent unless the provider has the server.
func (r *Reconciler) confirmAbsent(ctx context.Context, a *account, id uuid.UUID, serverID string) (cloud.Status, []string, error) {
	var found []cloud.Server
	err := a.call(ctx, "look up missed server", func(ctx context.Context) (err error) {
		found, err = a.driver.Find(ctx, id.String())
		return err
	})
	if err != nil {
		return "", nil, err
	}
	for _, s := range found {
		if s.ID == serverID {
			return s.Status, s.Addresses, nil
		}
	}
	return statusAbsent, nil, nil
}

// stillOrphan asks the provider whether an orphan's server still carries
// the label it was seen with, just before it is deleted by ID: the listing
// that found it may be stale, and a provider that reuses IDs (Proxmox's
// VMIDs) may have given the ID of the orphan, deleted since, to a new
// instance's server.
func (r *Reconciler) stillOrphan(ctx context.Context, a *account, o sqlc.ProviderOrphan) (bool, error) {
	if o.InstanceLabel == "" {
		return true, nil // nothing to look it up by; no instance's server carries no label
	}
	var found []cloud.Server
	err := a.call(ctx, "look up orphan", func(ctx context.Context) (err error) {
		found, err = a.driver.Find(ctx, o.InstanceLabel)
		return err
	})
	if err != nil {
		return false, err
	}
	for _, s := range found {
		if s.ID == o.ServerID {
			return true, nil
		}
	}
	return false, nil
}

// observe records a server's status and wakes its instance when it changed.
func (r *Reconciler) observe(ctx context.Context, q *sqlc.Queries, id uuid.UUID, serverID string, status cloud.Status, addrs []string, listedAt time.Time) error {
	s := string(status)
	if addrs == nil {
		addrs = []string{}
	}
	n, err := q.ObserveProviderServer(ctx, sqlc.ObserveProviderServerParams{ID: id, ServerID: serverID, Status: &s, Addresses: addrs, ListedAt: &listedAt})
	if err != nil {
		return fmt.Errorf("record server of instance %s: %w", ids.Log(ids.Instance, id), err)
	}
	if n > 0 {
		r.queue.add(instanceRequest(id))
	}
	return nil
}

// unowned returns the servers whose label names no live instance at all.
func (r *Reconciler) unowned(ctx context.Context, q *sqlc.Queries, servers []cloud.Server) ([]cloud.Server, error) {
	var labelled []uuid.UUID
	for _, s := range servers {
		if id, err := uuid.Parse(s.InstanceID); err == nil {
			labelled = append(labelled, id)
		}
	}
	live, err := q.LiveInstances(ctx, labelled)
	if err != nil {
		return nil, fmt.Errorf("look up labelled instances: %w", err)
	}
	alive := map[string]bool{}
	for _, id := range live {
		alive[id.String()] = true
	}
	var out []cloud.Server
	for _, s := range servers {
		if !alive[s.InstanceID] {
			out = append(out, s)
		}
	}
	return out, nil
}

// sweepOrphans notes the orphans seen now, forgets those no longer seen,
// and deletes those seen for the grace period, auditing each deletion.
func (r *Reconciler) sweepOrphans(ctx context.Context, q *sqlc.Queries, a *account, orphans []cloud.Server) error {
	seen := make([]string, len(orphans))
	for i, s := range orphans {
		seen[i] = s.ID
		if err := q.NoteOrphan(ctx, sqlc.NoteOrphanParams{AccountID: a.id, ServerID: s.ID, InstanceLabel: s.InstanceID}); err != nil {
			return fmt.Errorf("note orphan %s: %w", s.ID, err)
		}
	}
	if err := q.ForgetOrphansExcept(ctx, sqlc.ForgetOrphansExceptParams{AccountID: a.id, ServerIds: seen}); err != nil {
		return fmt.Errorf("forget orphans: %w", err)
	}
	due, err := q.DueOrphans(ctx, sqlc.DueOrphansParams{AccountID: a.id, GraceSeconds: r.cfg.OrphanGrace.Seconds()})
	if err != nil {
		return fmt.Errorf("list due orphans: %w", err)
	}
	for _, o := range due {
		still, err := r.stillOrphan(ctx, a, o)
		if err != nil {
			return err
		}
		if !still {
			if err := q.ForgetOrphan(ctx, sqlc.ForgetOrphanParams{AccountID: a.id, ServerID: o.ServerID}); err != nil {
				return fmt.Errorf("forget orphan %s: %w", o.ServerID, err)
			}
			continue
		}
		err = a.call(ctx, "delete orphan", func(ctx context.Context) error {
			return a.driver.Delete(ctx, cloud.Ref{ID: o.ServerID, InstanceID: o.InstanceLabel, Fresh: true})
		})
		if err != nil && cloud.KindOf(err) != cloud.NotFound {
			return err
		}
		err = pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
			q := sqlc.New(tx)
			if err := q.ForgetOrphan(ctx, sqlc.ForgetOrphanParams{AccountID: a.id, ServerID: o.ServerID}); err != nil {
				return err
			}
			ev := audit.Event{
				Action: ActDeleteOrphan, TargetType: "providerAccount", TargetID: a.id,
				Details: map[string]any{"provider": a.provider, "serverId": o.ServerID, "instanceLabel": o.InstanceLabel, "firstSeenAt": o.FirstSeenAt},
			}
			if a.tenantID != nil {
				ev.TenantID = *a.tenantID
			}
			return audit.Write(ctx, q, ev)
		})
		if err != nil {
			return fmt.Errorf("record deleted orphan %s: %w", o.ServerID, err)
		}
		r.log.InfoContext(ctx, "deleted an orphan server", "account", ids.Log(ids.ProviderAccount, a.id), "server", o.ServerID, "label", labelID(o.InstanceLabel))
	}
	return nil
}
