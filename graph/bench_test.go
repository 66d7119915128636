package graph_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCreateInstance measures createInstance over HTTP from 16
// concurrent clients against the real Postgres: creates per second and
// latency percentiles. "one-tenant" is the worst case, where every create
// takes the same tenant's admission lock; "16-tenants" gives each client its
// own tenant; "1-tenants-quota" is one tenant with a quota it never
// reaches, so every create also counts the tenant's usage under the lock.
func BenchmarkCreateInstance(b *testing.B) {
	for _, c := range []struct {
		tenants int
		quota   bool
	}{{1, false}, {1, true}, {16, false}} {
		name := fmt.Sprintf("%d-tenants", c.tenants)
		if c.quota {
			name += "-quota"
		}
		b.Run(name, func(b *testing.B) {
			tenants := c.tenants
			e := setup(b)
			worlds := make([]world, tenants)
			for i := range worlds {
				worlds[i] = e.world(fmt.Sprintf("t%d", i))
				if c.quota {
					e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 1000000}) { tenant { id } } }`, map[string]any{"t": worlds[i].tenant}, nil)
				}
			}
			const clients = 16
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((clients + procs - 1) / procs)

			var (
				next    atomic.Int64
				mu      sync.Mutex
				samples = make([]time.Duration, 0, b.N)
				failed  atomic.Int64
			)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				var local []time.Duration
				for pb.Next() {
					n := next.Add(1)
					w := worlds[int(n)%tenants]
					t0 := time.Now()
					r := e.do(w.member, createInstance, map[string]any{"in": w.input(fmt.Sprintf("vm-%d", n))})
					local = append(local, time.Since(t0))
					if len(r.Errors) > 0 {
						failed.Add(1)
					}
				}
				mu.Lock()
				samples = append(samples, local...)
				mu.Unlock()
			})
			elapsed := time.Since(start)
			b.StopTimer()
			if f := failed.Load(); f > 0 {
				b.Fatalf("%d creates failed", f)
			}
			slices.Sort(samples)
			pct := func(p float64) float64 {
				return float64(samples[int(p*float64(len(samples)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(float64(len(samples))/elapsed.Seconds(), "creates/s")
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}
