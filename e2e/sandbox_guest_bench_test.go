package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
)

// BenchmarkRealSandboxLogin measures, on real guests (libvirt, software
// emulation) through the real processes, side by side in one run, warm
// (claiming the template's one paused warm instance) and cold (booting a
// guest of its own): the time from sending createSandbox to the sandbox's
// RUNNING, and to a finished SSH login into its guest, which a client
// starts once the sandbox is RUNNING. Each sample starts with the warm pool
// full, so no refill boots beside it, and ends with its sandbox deleted and
// its domain gone. A third case, warm-behind-undefine, claims right after
// another running sandbox was deleted, so the host undefines that domain
// while it resumes the claimed one (a host that converged one instance
// after another made the resume wait; docs/benchmarks.md).
func BenchmarkRealSandboxLogin(b *testing.B) {
	url, format, sum := guestImage(b)
	const br, gw = "bcbr0", "10.50.0.1" // the seeded IP pool's network
	bridge(b, br, gw+"/22")
	c := sandboxCluster(b, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
	dir := libvirtHostWith(b, c, 4, "--bridge", br)
	c.useImage(url, sum, format, 256)
	signer, key := guestKey()
	warm := c.sandboxTemplate("warm", map[string]any{"sshKeys": []string{key}, "warmCount": 1})
	cold := c.sandboxTemplate("cold", map[string]any{"sshKeys": []string{key}})
	del := func(ref sandboxRef) {
		if codes := c.sandboxOp("deleteSandbox", ref.id, nil); len(codes) > 0 {
			b.Fatalf("deleteSandbox: %v", codes)
		}
	}

	lat := map[string][]time.Duration{}
	for range b.N {
		for _, k := range []struct{ name, template, from string }{
			{"COLD", cold, "COLD"}, {"WARM", warm, "WARM"}, {"WARM-behind-undefine", warm, "WARM"},
		} {
			testenv.Eventually(b, 3*time.Minute, "the warm pool full", func() bool { return c.warm(warm, "PAUSED", true) == 1 })
			if k.name == "WARM-behind-undefine" {
				other := c.createSandbox(cold, nil)
				testenv.Eventually(b, 3*time.Minute, "sandbox "+other.id+" RUNNING", func() bool { return c.sandboxState(other.id) == "RUNNING" })
				del(other)
			}
			begin := time.Now()
			ref := c.createSandbox(k.template, nil)
			if ref.startedFrom != k.from {
				b.Fatalf("a sandbox of the %s template started %s", k.from, ref.startedFrom)
			}
			addr := c.leaseOf(ref.instance)
			testenv.Eventually(b, 3*time.Minute, "sandbox "+ref.id+" RUNNING", func() bool { return c.sandboxState(ref.id) == "RUNNING" })
			lat[k.name+"-running"] = append(lat[k.name+"-running"], time.Since(begin))
			waitSSH(b, dir, ref.instance, addr, signer, "true")
			lat[k.name+"-login"] = append(lat[k.name+"-login"], time.Since(begin))
			del(ref)
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
