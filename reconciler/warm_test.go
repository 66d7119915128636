package reconciler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/lifecycle"
)

func TestPlanPool(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	// w makes a free warm instance named name, of version v, in state s,
	// made age ago.
	names := map[uuid.UUID]string{}
	w := func(name string, v int64, s lifecycle.State, age time.Duration) warmInstance {
		id := uuid.NewSHA1(uuid.NameSpaceOID, []byte(name))
		names[id] = name
		return warmInstance{id: id, version: v, state: s, created: now.Add(-age)}
	}
	const (
		paused, pending, starting = lifecycle.Paused, lifecycle.Pending, lifecycle.Starting
		errored, lost             = lifecycle.Error, lifecycle.Lost
	)
	sec := time.Second
	cases := []struct {
		name   string
		want   int
		free   []warmInstance
		retire []string
		add    int
		spare  string
	}{
		{"empty pool fills", 3, nil, nil, 3, ""},
		{"full pool at rest", 2, []warmInstance{w("a", 2, paused, sec), w("b", 2, starting, sec)}, nil, 0, ""},
		{"claims refilled", 3, []warmInstance{w("a", 2, paused, sec)}, nil, 2, ""},
		{"trim keeps the readiest", 1, []warmInstance{w("a", 2, starting, sec), w("b", 2, paused, 2*sec), w("c", 2, pending, sec)},
			[]string{"a", "c"}, 0, ""},
		{"deleted template empties", 0, []warmInstance{w("a", 2, paused, sec), w("b", 1, paused, sec)}, []string{"a", "b"}, 0, ""},
		{"broken ones are replaced", 2, []warmInstance{w("a", 2, errored, sec), w("b", 2, lost, sec), w("c", 2, paused, sec)},
			[]string{"a", "b"}, 1, ""},
		{"rollover keeps the old until new ones are ready", 2, []warmInstance{w("o1", 1, paused, sec), w("o2", 1, paused, 2*sec)},
			nil, 2, "o1"},
		{"rollover: new ones booting, old kept", 2, []warmInstance{w("o1", 1, paused, sec), w("o2", 1, paused, sec), w("n1", 2, starting, sec), w("n2", 2, pending, sec)},
			nil, 0, ""},
		{"rollover: one new ready, one old goes", 2, []warmInstance{w("o1", 1, paused, 2*sec), w("o2", 1, paused, sec), w("n1", 2, paused, sec), w("n2", 2, starting, sec)},
			[]string{"o2"}, 0, ""},
		{"rollover done", 2, []warmInstance{w("o1", 1, paused, sec), w("n1", 2, paused, sec), w("n2", 2, paused, sec)},
			[]string{"o1"}, 0, ""},
		{"rollover: a new one waits for room, an old one makes it", 2, []warmInstance{w("o1", 1, paused, sec), w("o2", 1, paused, 2*sec), w("n1", 2, pending, time.Minute)},
			[]string{"o1"}, 1, ""},
		{"rollover: a new one just made is not stuck", 2, []warmInstance{w("o1", 1, paused, sec), w("o2", 1, paused, 2*sec), w("n1", 2, pending, sec), w("n2", 2, pending, sec)},
			nil, 0, ""},
		{"old ones beyond a smaller count go at once", 1, []warmInstance{w("o1", 1, paused, sec), w("o2", 1, starting, sec)},
			[]string{"o2"}, 1, "o1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := planPool(warmPool{want: c.want, version: 2, free: c.free, now: now, stuckAfter: 15 * time.Second})
			var retired []string
			for _, id := range u.retire {
				retired = append(retired, names[id])
			}
			slices.Sort(retired)
			spare := names[u.spare]
			if !slices.Equal(retired, c.retire) || u.add != c.add || spare != c.spare {
				t.Fatalf("retire %v, add %d, spare %q; want %v, %d, %q", retired, u.add, spare, c.retire, c.add, c.spare)
			}
		})
	}
}

// TestPlanPoolRollsOver runs a rollover of a pool of n, one readiness step
// at a time, as the hosts and the reconciler would: the pool never holds
// fewer than n ready instances (old or new), and ends with n of the new
// version and none of the old.
func TestPlanPoolRollsOver(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, n := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var free []warmInstance
			for range n {
				free = append(free, warmInstance{id: uuid.New(), version: 1, state: lifecycle.Paused, created: now})
			}
			advance := []lifecycle.State{lifecycle.Pending, lifecycle.Provisioning, lifecycle.Starting, lifecycle.Paused}
			for round := range 20 {
				u := planPool(warmPool{want: n, version: 2, free: free, now: now, stuckAfter: time.Minute})
				var next []warmInstance
				for _, w := range free {
					if slices.Contains(u.retire, w.id) {
						continue
					}
					if i := slices.Index(advance, w.state); w.version == 2 && i < len(advance)-1 {
						w.state = advance[i+1]
					}
					next = append(next, w)
				}
				for range u.add {
					next = append(next, warmInstance{id: uuid.New(), version: 2, state: lifecycle.Pending, created: now})
				}
				free = next
				ready, old := 0, 0
				for _, w := range free {
					if w.state == lifecycle.Paused {
						ready++
					}
					if w.version == 1 {
						old++
					}
				}
				if ready < n {
					t.Fatalf("round %d: %d ready of %d: %+v", round, ready, n, free)
				}
				if old == 0 && len(free) == n {
					return
				}
			}
			t.Fatalf("not rolled over after 20 rounds: %+v", free)
		})
	}
}
