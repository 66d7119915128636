package e2e

import (
	"context"
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

const usageInterval = 2 * time.Second

// TestUsageMetering runs vps.usage in two reconcile processes with 2 s
// intervals over five instances on a fake host: across four intervals in
// which one reconciler is SIGKILLed and started again, one instance is
// stopped and a sixth instance is deleted, there is exactly one row per
// instance per interval, each instance's seconds add up to the interval,
// the stop is split at its recorded moments, and the deleted instance has
// no row after its deletion. Then both reconcilers are down for five
// intervals: started again, they meter every missed interval from the
// history, and each row equals what the history says.
func TestUsageMetering(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 2, hostVcpus: 16,
		reconcileEnv: []string{"BC_USAGE_INTERVAL=" + usageInterval.String(), "BC_USAGE_SETTLE=200ms"}})
	var insts []string
	for _, name := range []string{"a", "b", "c", "d", "e", "doomed"} {
		insts = append(insts, c.create(name, "RUNNING"))
	}
	c.settle(30 * time.Second)
	stopper, doomed := insts[1], insts[5]

	b0 := c.clock().Truncate(usageInterval).Add(usageInterval)
	c.waitClock(b0.Add(usageInterval / 2))
	c.reconcs[0].signal(syscall.SIGKILL)
	c.reconcs[0].start()
	c.waitClock(b0.Add(usageInterval + usageInterval/4))
	c.set("stopInstance", stopper)
	c.settle(30 * time.Second)
	c.waitClock(b0.Add(2*usageInterval + usageInterval/4))
	c.set("deleteInstance", doomed)
	c.settle(30 * time.Second)
	c.waitMetered(b0.Add(4 * usageInterval))

	if n := c.count(`usage_records WHERE interval_start >= $1 AND interval_start < $2 AND instance_id <> $3`,
		b0, b0.Add(4*usageInterval), c.uuid(doomed)); n != 20 {
		t.Errorf("%d rows for 5 instances over 4 intervals, want 20", n)
	}
	for _, id := range insts[:5] {
		for k := range 4 {
			c.checkInterval(id, b0.Add(time.Duration(k)*usageInterval), usageInterval.Seconds())
		}
	}
	// The stop: RUNNING until STOPPING, STOPPED after, as recorded.
	var stopAt, stoppedAt time.Time
	if err := c.db.QueryRow(context.Background(), `SELECT min(at) FILTER (WHERE to_state = 'STOPPING'), min(at) FILTER (WHERE to_state = 'STOPPED')
		FROM instance_state_history WHERE instance_id = $1`, c.uuid(stopper)).Scan(&stopAt, &stoppedAt); err != nil {
		t.Fatal(err)
	}
	start := stopAt.Truncate(usageInterval)
	end := start.Add(usageInterval)
	var running, other, stopped float64
	if err := c.db.QueryRow(context.Background(), `SELECT running_seconds, other_seconds, stopped_seconds FROM usage_records
		WHERE instance_id = $1 AND interval_start = $2`, c.uuid(stopper), start).Scan(&running, &other, &stopped); err != nil {
		t.Fatal(err)
	}
	wantStopped := max(end.Sub(stoppedAt).Seconds(), 0)
	if !near(running, stopAt.Sub(start).Seconds()) || !near(stopped, wantStopped) || !near(other, end.Sub(stopAt).Seconds()-wantStopped) ||
		start.Before(b0.Add(usageInterval)) {
		t.Errorf("STOPPING at %s, STOPPED at %s, in the interval from %s: metered running %.3f, other %.3f, stopped %.3f",
			stopAt, stoppedAt, start, running, other, stopped)
	}
	// The deletion: metered up to its recorded moment, nothing after.
	var deletedAt time.Time
	if err := c.db.QueryRow(context.Background(), `SELECT at FROM instance_state_history WHERE instance_id = $1 AND to_state = 'DELETED'`,
		c.uuid(doomed)).Scan(&deletedAt); err != nil {
		t.Fatal(err)
	}
	last := deletedAt.Truncate(usageInterval)
	if n := c.count(`usage_records WHERE instance_id = $1 AND interval_start > $2`, c.uuid(doomed), deletedAt); n != 0 {
		t.Errorf("%d rows after the deleted instance's deletion, want none", n)
	}
	if n := c.count(`usage_records WHERE instance_id = $1 AND interval_start >= $2 AND interval_start <= $3`, c.uuid(doomed), b0, last); n != int(last.Sub(b0)/usageInterval)+1 {
		t.Errorf("the deleted instance has %d rows from the first interval to its deletion's, want %d", n, int(last.Sub(b0)/usageInterval)+1)
	}
	c.checkInterval(doomed, last, deletedAt.Sub(last).Seconds())

	// The job down for five intervals.
	for _, r := range c.reconcs {
		r.signal(syscall.SIGKILL)
	}
	down := c.clock().Truncate(usageInterval).Add(usageInterval)
	c.waitClock(down.Add(5 * usageInterval))
	for _, r := range c.reconcs {
		r.start()
	}
	c.waitMetered(down.Add(5 * usageInterval))
	for _, id := range insts[:5] {
		for k := range 5 {
			c.checkInterval(id, down.Add(time.Duration(k)*usageInterval), usageInterval.Seconds())
		}
	}
	var stoppedAll float64
	if err := c.db.QueryRow(context.Background(), `SELECT sum(stopped_seconds) FROM usage_records WHERE instance_id = $1
		AND interval_start >= $2 AND interval_start < $3`, c.uuid(stopper), down, down.Add(5*usageInterval)).Scan(&stoppedAll); err != nil {
		t.Fatal(err)
	}
	if !near(stoppedAll, 5*usageInterval.Seconds()) {
		t.Errorf("the stopped instance was metered %.3f s STOPPED in the 5 missed intervals, want %.0f", stoppedAll, 5*usageInterval.Seconds())
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

// clock is the database's clock, which the state history is written by.
func (c *cluster) clock() time.Time {
	c.t.Helper()
	var t time.Time
	if err := c.db.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&t); err != nil {
		c.t.Fatal(err)
	}
	return t
}

// waitClock waits until the database's clock passes t.
func (c *cluster) waitClock(t time.Time) {
	c.t.Helper()
	testenv.Eventually(c.t, time.Until(t)+10*time.Second, "the clock to pass "+t.String(), func() bool { return c.clock().After(t) })
}

// waitMetered waits until every usage interval before t is metered.
func (c *cluster) waitMetered(t time.Time) {
	c.t.Helper()
	testenv.Eventually(c.t, time.Until(t)+30*time.Second, "usage metered until "+t.String(), func() bool {
		return c.count(`usage_meter WHERE metered_until >= $1`, t) == 1
	})
}

// uuid decodes an instance's API ID.
func (c *cluster) uuid(id string) any {
	c.t.Helper()
	u, ok := ids.Decode(ids.Instance, id)
	if !ok {
		c.t.Fatalf("not an instance ID: %s", id)
	}
	return u
}

// checkInterval checks an instance has one row for the interval starting
// at start, whose seconds add up to want.
func (c *cluster) checkInterval(id string, start time.Time, want float64) {
	c.t.Helper()
	var n int
	var total float64
	if err := c.db.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(running_seconds + paused_seconds + stopped_seconds + other_seconds), 0)
		FROM usage_records WHERE instance_id = $1 AND interval_start = $2`, c.uuid(id), start).Scan(&n, &total); err != nil {
		c.t.Fatal(err)
	}
	if n != 1 || !near(total, want) {
		c.t.Errorf("%s at %s: %d rows of %.3f s, want one of %.3f s", id, start.Format(time.RFC3339Nano), n, total, want)
	}
}
