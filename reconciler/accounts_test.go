package reconciler

import (
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/cloud"
)

// TestPacing: calls are spaced only once the stated budget runs low, then
// at the rate it refills; sweeps slow down once half of it is spent.
func TestPacing(t *testing.T) {
	t.Parallel()
	now := time.Now()
	full := now.Add(time.Hour) // Hetzner: 3,600 an hour, one a second
	cases := []struct {
		name          string
		b             cloud.Budget
		gap, interval time.Duration
	}{
		{"no rate limit stated", cloud.Budget{}, 0, 10 * time.Second},
		{"plenty left", cloud.Budget{Limit: 3600, Remaining: 3000, Reset: now.Add(600 * time.Second)}, 0, 10 * time.Second},
		{"under half", cloud.Budget{Limit: 3600, Remaining: 1000, Reset: now.Add(2600 * time.Second)}, 0, 50 * time.Second},
		{"nearly spent", cloud.Budget{Limit: 3600, Remaining: 0, Reset: full}, time.Second, 50 * time.Second},
		{"overdrawn by calls in flight", cloud.Budget{Limit: 3600, Remaining: -8, Reset: full}, time.Second, 50 * time.Second},
		{"reset passed", cloud.Budget{Limit: 3600, Remaining: 0, Reset: now.Add(-time.Second)}, 0, 50 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := spacing(c.b, now); got != c.gap {
				t.Errorf("spacing = %v, want %v", got, c.gap)
			}
			if got := sweepInterval(10*time.Second, c.b, false); got != c.interval {
				t.Errorf("sweepInterval = %v, want %v", got, c.interval)
			}
			// A start or stop under way quickens the sweep, unless the budget
			// is short.
			want := c.interval
			if want == 10*time.Second {
				want = 2500 * time.Millisecond
			}
			if got := sweepInterval(10*time.Second, c.b, true); got != want {
				t.Errorf("sweepInterval while changing = %v, want %v", got, want)
			}
		})
	}
}
