package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/vps"
)

// BenchmarkLibvirtHost runs 20 small domains (64 MiB, no OS) on one libvirt
// host under software emulation, through the whole control plane, and
// reports how long until all are RUNNING and the host daemon's memory.
func BenchmarkLibvirtHost(b *testing.B) {
	for range b.N {
		b.StopTimer()
		c := start(b, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
		libvirtHostWith(b, c, 32)
		url, sum := qcow2Image(b)
		c.useImage(url, sum, "qcow2", 64)
		host := c.hosts[len(c.hosts)-1]
		idle := rss(b, host)
		b.StartTimer()
		t0 := time.Now()
		for i := range 20 {
			c.create(fmt.Sprintf("vm-%d", i), "RUNNING")
		}
		c.settle(5 * time.Minute)
		took := time.Since(t0)
		b.StopTimer()
		b.ReportMetric(took.Seconds(), "s-20-running")
		b.ReportMetric(float64(idle)/(1<<20), "daemon-MiB-idle")
		b.ReportMetric(float64(rss(b, host))/(1<<20), "daemon-MiB-20-domains")
	}
}
