package reconciler_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
)

// usageRow is one usage_records row, as the tests compare them.
type usageRow struct {
	Instance                        uuid.UUID
	Start                           time.Time
	Running, Paused, Stopped, Other float64
	Tenant, Pool, Flavor            uuid.UUID
	Vcpus, DiskGB, GPUs             int32
	MemoryMB                        int64
}

// usageEnv meters instances of a provider pool the reconcilers have no
// driver for: nothing but the test changes their state, by writing it as
// a reconciler would, so each interval's expected seconds are known.
type usageEnv struct {
	*env
	interval time.Duration
}

func setupUsage(t *testing.T, interval time.Duration) *usageEnv {
	e := setup(t)
	a, err := e.svc.CreateProviderAccount(e.ctx, control.ProviderAccountInput{TenantID: e.tenant, Name: "nowhere",
		Provider: control.ProviderHetzner, Credentials: "token", Settings: map[string]any{"endpoint": "https://127.0.0.1:1", "location": "fsn1"}})
	e.check(err)
	p, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: "cloud", Class: vps.ClassProvider, TenantID: e.tenant, ProviderAccountID: a.ID})
	e.check(err)
	e.pool = p.ID
	_, err = e.db.Exec(e.ctx, `UPDATE flavors SET provider_types = '{"hetzner": "cx22"}'`)
	e.check(err)
	_, err = e.db.Exec(e.ctx, `UPDATE images SET provider_images = '{"hetzner": "debian-12"}'`)
	e.check(err)
	return &usageEnv{env: e, interval: interval}
}

// meter starts a reconciler metering every interval and returns what
// stops it (also called when the test ends).
func (u *usageEnv) meter() (stop func()) {
	u.started++
	r := reconciler.New(reconciler.Config{DB: u.db, Redis: u.rdb, Prefix: u.prefix, Consumer: uuid.NewString(),
		RescanInterval: time.Second, Logger: u.log, UsageInterval: u.interval, UsageSettle: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			u.t.Errorf("reconciler: %v", err)
		}
	}
	u.t.Cleanup(stop)
	return stop
}

// set writes an instance's state (and desired state) as a reconciler's
// transition would, and returns the database's clock just before and
// after, between which the change was recorded.
func (u *usageEnv) set(id uuid.UUID, state string) (before, after time.Time) {
	u.t.Helper()
	desired := map[string]string{"RUNNING": "RUNNING", "PAUSED": "RUNNING", "STOPPED": "STOPPED",
		"DELETING": "DELETED", "DELETED": "DELETED"}[state]
	before = u.clock()
	_, err := u.db.Exec(context.Background(), `UPDATE instances SET state = $2, desired_state = $3, version = version + 1 WHERE id = $1`, id, state, desired)
	u.check(err)
	return before, u.clock()
}

func (u *usageEnv) clock() time.Time {
	u.t.Helper()
	var t time.Time
	u.check(u.db.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&t))
	return t
}

// boundary is the first interval boundary after t.
func (u *usageEnv) boundary(t time.Time) time.Time {
	return t.Truncate(u.interval).Add(u.interval)
}

// waitClock waits until the database's clock passes t.
func (u *usageEnv) waitClock(t time.Time) {
	u.t.Helper()
	testenv.Eventually(u.t, time.Until(t)+10*time.Second, "the clock to pass "+t.String(), func() bool { return u.clock().After(t) })
}

// waitMetered waits until every interval before t is metered.
func (u *usageEnv) waitMetered(t time.Time) {
	u.t.Helper()
	testenv.Eventually(u.t, time.Until(t)+20*time.Second, "usage metered until "+t.String(), func() bool {
		var until time.Time
		err := u.db.QueryRow(context.Background(), `SELECT metered_until FROM usage_meter`).Scan(&until)
		return err == nil && !until.Before(t)
	})
}

// rows reads the usage rows of intervals in [from, to), by instance and
// interval start.
func (u *usageEnv) rows(from, to time.Time) map[uuid.UUID]map[time.Time]usageRow {
	u.t.Helper()
	rs, err := u.db.Query(context.Background(), `SELECT instance_id, interval_start, running_seconds, paused_seconds,
		stopped_seconds, other_seconds, tenant_id, pool_id, flavor_id, vcpus, disk_gb, gpu_count, memory_mb
		FROM usage_records WHERE interval_start >= $1 AND interval_start < $2`, from, to)
	u.check(err)
	defer rs.Close()
	out := map[uuid.UUID]map[time.Time]usageRow{}
	for rs.Next() {
		var r usageRow
		u.check(rs.Scan(&r.Instance, &r.Start, &r.Running, &r.Paused, &r.Stopped, &r.Other, &r.Tenant, &r.Pool, &r.Flavor,
			&r.Vcpus, &r.DiskGB, &r.GPUs, &r.MemoryMB))
		r.Start = r.Start.UTC()
		if out[r.Instance] == nil {
			out[r.Instance] = map[time.Time]usageRow{}
		}
		if _, dup := out[r.Instance][r.Start]; dup {
			u.t.Errorf("two rows for %s at %s", r.Instance, r.Start)
		}
		out[r.Instance][r.Start] = r
	}
	u.check(rs.Err())
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

func total(r usageRow) float64 { return r.Running + r.Paused + r.Stopped + r.Other }

// Five instances over four intervals with two reconcilers, one of which
// stops mid-run and is replaced: one row per instance per interval,
// seconds adding up to the interval, a stop split at the recorded moment,
// and a deleted sixth instance metered up to its deletion only.
func TestUsageMetersEachIntervalOnce(t *testing.T) {
	t.Parallel()
	u := setupUsage(t, 2*time.Second)
	var ids []uuid.UUID
	for _, name := range []string{"a", "b", "c", "d", "e", "doomed"} {
		id := u.create(name)
		u.set(id, "RUNNING")
		ids = append(ids, id)
	}
	stopper, doomed := ids[1], ids[5]
	b0 := u.boundary(u.clock())
	ends := b0.Add(4 * u.interval)
	first := u.meter()
	u.meter()

	// Interval 1: the stopper stops half way; the first reconciler goes.
	u.waitClock(b0.Add(u.interval + u.interval/2))
	stopBefore, stopAfter := u.set(stopper, "STOPPED")
	first()
	u.meter()
	// Interval 2: the doomed instance is deleted a quarter in.
	u.waitClock(b0.Add(2*u.interval + u.interval/4))
	u.set(doomed, "DELETING")
	_, deletedAfter := u.set(doomed, "DELETED")
	u.waitMetered(ends)

	got := u.rows(b0, ends)
	for _, id := range ids[:5] {
		if len(got[id]) != 4 {
			t.Errorf("instance %s has %d rows in 4 intervals, want 4", id, len(got[id]))
		}
		for k := range 4 {
			start := b0.Add(time.Duration(k) * u.interval).UTC()
			r, ok := got[id][start]
			if !ok {
				t.Errorf("no row for %s at interval %d", id, k)
				continue
			}
			if !near(total(r), u.interval.Seconds()) {
				t.Errorf("%s interval %d: seconds add up to %v, want %v", id, k, total(r), u.interval.Seconds())
			}
			if r.Tenant != u.tenant || r.Pool != u.pool || r.Flavor != u.flavor || r.Vcpus != 1 || r.MemoryMB != 1024 || r.DiskGB != 10 {
				t.Errorf("%s interval %d holds %+v, want the flavor's size, tenant and pool", id, k, r)
			}
		}
	}
	n := 0
	for _, id := range ids[:5] {
		n += len(got[id])
	}
	if n != 20 {
		t.Errorf("%d rows for the five instances, want 20", n)
	}

	split := got[stopper][b0.Add(u.interval).UTC()]
	start := b0.Add(u.interval)
	lo, hi := stopBefore.Sub(start).Seconds(), stopAfter.Sub(start).Seconds()
	if split.Running < lo-1e-3 || split.Running > hi+1e-3 || !near(split.Running+split.Stopped, u.interval.Seconds()) {
		t.Errorf("stopped between %.3fs and %.3fs into the interval, metered running %.3fs stopped %.3fs", lo, hi, split.Running, split.Stopped)
	}
	if r := got[stopper][b0.Add(2*u.interval).UTC()]; !near(r.Stopped, u.interval.Seconds()) || r.Running != 0 {
		t.Errorf("the interval after the stop: %+v, want all of it stopped", r)
	}

	if len(got[doomed]) != 3 {
		t.Errorf("the deleted instance has %d rows, want 3 (up to the interval it was deleted in)", len(got[doomed]))
	}
	last := got[doomed][b0.Add(2*u.interval).UTC()]
	if want := deletedAfter.Sub(b0.Add(2 * u.interval)).Seconds(); total(last) <= 0 || total(last) > want+1e-3 {
		t.Errorf("the deletion's interval metered %.3fs, want at most the %.3fs before it", total(last), want)
	}
	if after := u.count(`usage_records WHERE instance_id = $1 AND interval_start >= $2`, doomed, b0.Add(3*u.interval)); after != 0 {
		t.Errorf("%d rows after the deletion, want none", after)
	}
}

// With the job down, the intervals it missed are metered when it is back,
// from the state history, equal to what an uninterrupted run wrote: the
// rows of five intervals metered live are removed and the meter set back,
// and while it is stopped for five more intervals states change; the
// restarted job writes the same five rows again and fills the five it
// missed.
func TestUsageFillsMissedIntervalsFromTheHistory(t *testing.T) {
	t.Parallel()
	u := setupUsage(t, time.Second)
	a, b, c := u.create("a"), u.create("b"), u.create("c")
	u.set(a, "RUNNING")
	u.set(b, "RUNNING")
	b0 := u.boundary(u.clock())
	stop := u.meter()
	u.waitClock(b0.Add(u.interval / 3))
	u.set(a, "PAUSED")
	u.set(c, "RUNNING")
	u.waitClock(b0.Add(2*u.interval + u.interval/2))
	u.set(b, "STOPPED")
	u.waitClock(b0.Add(3 * u.interval))
	u.set(a, "RUNNING")
	u.waitMetered(b0.Add(5 * u.interval))
	stop()
	live := u.rows(b0, b0.Add(5*u.interval))

	_, err := u.db.Exec(u.ctx, `DELETE FROM usage_records WHERE interval_start >= $1`, b0)
	u.check(err)
	_, err = u.db.Exec(u.ctx, `UPDATE usage_meter SET metered_until = $1`, b0)
	u.check(err)
	down := u.boundary(u.clock())
	u.waitClock(down.Add(u.interval / 2))
	u.set(c, "STOPPED")
	u.waitClock(down.Add(5 * u.interval))

	u.meter()
	u.waitMetered(down.Add(5 * u.interval))
	filled := u.rows(b0, b0.Add(5*u.interval))
	for id, byStart := range live {
		for start, want := range byStart {
			if got := filled[id][start]; !near(got.Running, want.Running) || !near(got.Paused, want.Paused) ||
				!near(got.Stopped, want.Stopped) || !near(got.Other, want.Other) || got.Vcpus != want.Vcpus {
				t.Errorf("%s at %s: filled %+v, live %+v", id, start, got, want)
			}
		}
	}
	if len(filled) != len(live) || len(live) != 3 {
		t.Errorf("filled rows of %d instances, live of %d, want 3", len(filled), len(live))
	}
	missed := u.rows(down, down.Add(5*u.interval))
	for _, id := range []uuid.UUID{a, b, c} {
		if len(missed[id]) != 5 {
			t.Errorf("%s: %d of the 5 missed intervals metered", id, len(missed[id]))
		}
	}
	if r := missed[c][down.UTC()]; !near(r.Running+r.Stopped, u.interval.Seconds()) || r.Running < u.interval.Seconds()/2-1e-3 {
		t.Errorf("c stopped half way into the first missed interval: %+v", r)
	}
}

// The state history has a row for each change of an instance's state or
// of what it holds, each ending when the next begins, and none for other
// writes; an instance removed outright ends DELETED.
func TestStateHistoryRecordsEachChange(t *testing.T) {
	t.Parallel()
	u := setupUsage(t, time.Minute)
	id := u.create("a")
	u.set(id, "RUNNING")
	_, err := u.db.Exec(u.ctx, `UPDATE instances SET observed_state = 'running', state_reason = 'x' WHERE id = $1`, id)
	u.check(err)
	_, err = u.db.Exec(u.ctx, `UPDATE instances SET vcpus = 2 WHERE id = $1`, id)
	u.check(err)
	_, err = u.db.Exec(u.ctx, `DELETE FROM outbox`)
	u.check(err)
	_, err = u.db.Exec(u.ctx, `DELETE FROM instances WHERE id = $1`, id)
	u.check(err)

	rows, err := u.db.Query(u.ctx, `SELECT coalesce(from_state, ''), to_state, vcpus, at, ended_at FROM instance_state_history
		WHERE instance_id = $1 ORDER BY id`, id)
	u.check(err)
	defer rows.Close()
	type change struct {
		from, to string
		vcpus    int32
	}
	var got []change
	var lastEnd *time.Time
	for rows.Next() {
		var c change
		var at time.Time
		var ended *time.Time
		u.check(rows.Scan(&c.from, &c.to, &c.vcpus, &at, &ended))
		if lastEnd != nil && !lastEnd.Equal(at) {
			t.Errorf("%+v begins at %s, the change before it ended at %s", c, at, lastEnd)
		}
		lastEnd = ended
		got = append(got, c)
	}
	u.check(rows.Err())
	want := []change{{"", "PENDING", 1}, {"PENDING", "RUNNING", 1}, {"RUNNING", "RUNNING", 2}, {"RUNNING", "DELETED", 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) || lastEnd != nil {
		t.Errorf("history %+v (the last ending %v), want %+v, the last open", got, lastEnd, want)
	}
}
