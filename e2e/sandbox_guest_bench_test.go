package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// BenchmarkRealSandboxLogin measures, on real guests (libvirt, software
// emulation) through the real processes, side by side in one run, warm
// (claiming the template's one paused warm instance) and cold (booting a
// guest of its own): the time from sending createSandbox to the sandbox's
// RUNNING, and to a finished SSH login into its guest, which a client
// starts once the sandbox is RUNNING. Each sample runs alone: it waits for
// the warm pool to be full, so no refill boots beside it, and its sandbox
// is deleted, its domain gone, before the next: the host daemon converges
// one instance after another, so a resume that lands behind another
// instance's define or undefine waits for it (docs/benchmarks.md).
func BenchmarkRealSandboxLogin(b *testing.B) {
	url, format, sum := guestImage(b)
	const br, gw = "bcbr0", "10.50.0.1" // the seeded IP pool's network
	bridge(b, br, gw+"/22")
	c := sandboxCluster(b, options{reconcilers: 1})
	dir := libvirtHostWith(b, c, 4, "--bridge", br)
	c.useImage(url, sum, format, 256)
	signer, key := guestKey()
	warm := c.sandboxTemplate("warm", map[string]any{"sshKeys": []string{key}, "warmCount": 1})
	cold := c.sandboxTemplate("cold", map[string]any{"sshKeys": []string{key}})

	lat := map[string][]time.Duration{}
	for range b.N {
		for _, k := range []struct{ template, from string }{{cold, "COLD"}, {warm, "WARM"}} {
			testenv.Eventually(b, 3*time.Minute, "the warm pool full", func() bool { return c.warm(warm, "PAUSED", true) == 1 })
			begin := time.Now()
			ref := c.createSandbox(k.template, nil)
			if ref.startedFrom != k.from {
				b.Fatalf("a sandbox of the %s template started %s", k.from, ref.startedFrom)
			}
			addr := c.leaseOf(ref.instance)
			testenv.Eventually(b, 3*time.Minute, "sandbox "+ref.id+" RUNNING", func() bool { return c.sandboxState(ref.id) == "RUNNING" })
			lat[k.from+"-running"] = append(lat[k.from+"-running"], time.Since(begin))
			waitSSH(b, dir, ref.instance, addr, signer, "true")
			lat[k.from+"-login"] = append(lat[k.from+"-login"], time.Since(begin))
			if codes := c.sandboxOp("deleteSandbox", ref.id, nil); len(codes) > 0 {
				b.Fatalf("deleteSandbox: %v", codes)
			}
			c.settle(2 * time.Minute)
		}
	}
	b.StopTimer()
	for k, l := range lat {
		slices.Sort(l)
		b.ReportMetric(ms(l[len(l)/2]), k+"-p50-ms")
		b.ReportMetric(ms(l[len(l)-1]), k+"-max-ms")
	}
}
