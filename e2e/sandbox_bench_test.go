package e2e

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// BenchmarkSandboxCreate measures, side by side on one cluster of
// zero-delay fake hosts, one sandbox at a time, the time from sending
// createSandbox to its instance's RUNNING event: warm (claiming a paused
// instance of a pool of 20, refilled before each sample) and cold. Then
// how many createSandbox calls 16 clients get answered a second (cold:
// a warm pool would run dry).
func BenchmarkSandboxCreate(b *testing.B) {
	c := start(b, options{hosts: 2, reconcilers: 1, hostVcpus: 100_000, reconcileEnv: []string{"BC_SANDBOX_INTERVAL=1s"}})
	w := watchRunning(b, c, -1)
	warm := c.sandboxTemplate("warm", map[string]any{"warmCount": 20})
	cold := c.sandboxTemplate("cold", nil)
	for _, k := range []struct{ name, template, from string }{{"warm", warm, "WARM"}, {"cold", cold, "COLD"}} {
		b.Run(k.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				if k.from == "WARM" {
					b.StopTimer()
					// The pool refilled: the sample does not share the
					// hosts and reconciler with a refill.
					testenv.Eventually(b, 30*time.Second, "the pool full", func() bool { return c.warm(warm, "PAUSED", true) == 20 })
					b.StartTimer()
				}
				t0 := time.Now()
				ref, errs := c.tryCreateSandbox(c.url, k.template, nil)
				if len(errs) > 0 || ref.startedFrom != k.from {
					b.Fatalf("createSandbox: %v, started %s; want %s", errs, ref.startedFrom, k.from)
				}
				lat = append(lat, w.wait(b, ref.instance).Sub(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
		})
	}
	b.Run("16-clients", func(b *testing.B) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		t0 := time.Now()
		for range b.N {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if _, errs := c.tryCreateSandbox(c.url, cold, nil); len(errs) > 0 {
					b.Errorf("createSandbox: %v", errs)
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "sandboxes/s")
	})
}
