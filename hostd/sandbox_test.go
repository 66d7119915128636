package hostd_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/drivers/runtime/netpolicy"
	"github.com/better-compute/vps/drivers/runtime/nocloud"
	"github.com/better-compute/vps/hostproto"
)

// TestBootThenPause: an instance whose power is paused is booted, reported
// running while it boots, and paused once booted, with one Pause: never
// frozen before its guest is up. Resumed, it runs from there, on the same
// domain, disk and seed.
func TestBootThenPause(t *testing.T) {
	t.Parallel()
	for _, boot := range []time.Duration{0, 150 * time.Millisecond} {
		t.Run("boot "+boot.String(), func(t *testing.T) {
			t.Parallel()
			gw := newGateway(t)
			hv := newHypervisor(t, fake.Config{BootDelay: boot})
			start(t, gw, hv)

			gen := gw.setSpec(instance("ins_warm", hostproto.PowerPaused))
			waitReport(t, gw, "ins_warm paused", func(r hostproto.Report) bool {
				return is(r, gen, map[string]hostproto.State{"ins_warm": hostproto.StatePaused})
			})
			// (Start is called again while the fake domain boots: it is
			// listed stopped, and starting a booting domain does nothing.)
			warm := hv.Calls("ins_warm")
			if warm.Pause != 1 {
				t.Fatalf("calls %+v, want one pause, once booted", warm)
			}
			overlay, _ := hv.Overlay("ins_warm")

			gen = gw.setSpec(instance("ins_warm", hostproto.PowerRunning))
			waitReport(t, gw, "ins_warm running", func(r hostproto.Report) bool {
				return is(r, gen, map[string]hostproto.State{"ins_warm": hostproto.StateRunning})
			})
			got := hv.Calls("ins_warm")
			if got.Define != 1 || got.Start != warm.Start || got.Resume != 1 || got.Shutdown != 0 {
				t.Fatalf("calls %+v, want the warm domain resumed, not made again", got)
			}
			if o, _ := hv.Overlay("ins_warm"); o != overlay {
				t.Fatalf("overlay %q, want the warm one %q", o, overlay)
			}
		})
	}
}

// TestStatsReported: every report carries each running or paused
// instance's stats; a paused instance's CPU time stands still, and a
// stopped one has none.
func TestStatsReported(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv)

	gen := gw.setSpec(instance("ins_run", hostproto.PowerRunning), instance("ins_warm", hostproto.PowerPaused), instance("ins_off", hostproto.PowerStopped))
	want := map[string]hostproto.State{"ins_run": hostproto.StateRunning, "ins_warm": hostproto.StatePaused, "ins_off": hostproto.StateStopped}
	stats := func(r hostproto.Report, id string) *hostproto.Stats {
		s, _ := status(r, id)
		return s.Stats
	}
	first := waitReport(t, gw, "stats of both live instances", func(r hostproto.Report) bool {
		return is(r, gen, want) && stats(r, "ins_run") != nil && stats(r, "ins_warm") != nil
	})
	if s := stats(first, "ins_off"); s != nil {
		t.Errorf("a stopped instance has stats %+v", s)
	}
	for _, id := range []string{"ins_run", "ins_warm"} {
		if m := stats(first, id).MemoryBytes; m <= 0 || m > 1024<<20 {
			t.Errorf("%s uses %d bytes of memory, want some of its 1024 MiB", id, m)
		}
	}
	later := waitReport(t, gw, "ins_run's CPU time grown", func(r hostproto.Report) bool {
		return is(r, gen, want) && stats(r, "ins_run") != nil && stats(r, "ins_run").CPUTimeNs > stats(first, "ins_run").CPUTimeNs
	})
	if a, b := stats(first, "ins_warm"), stats(later, "ins_warm"); b == nil || a.CPUTimeNs != b.CPUTimeNs {
		t.Errorf("a paused instance's CPU time went from %+v to %+v", a, b)
	}
}

// TestSandboxSpec: an instance's env reaches its seed as vendor-data, and
// its network policy becomes the rules its runtime enforces. A policy no
// host can enforce makes the instance invalid.
func TestSandboxSpec(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv)

	sbx := instance("ins_sbx", hostproto.PowerRunning)
	sbx.UserData = "#cloud-config\nruncmd: [tenant]\n"
	sbx.Env = map[string]string{"GREETING": "hello", "TOKEN": "it's"}
	sbx.NetworkPolicy = &hostproto.NetworkPolicy{AllowOut: []string{"10.50.0.1"}, DenyOut: []string{"10.50.0.0/22"}}
	bad := instance("ins_bad", hostproto.PowerRunning)
	bad.NetworkPolicy = &hostproto.NetworkPolicy{AllowOut: []string{"10.50.0.1", "example.com"}}
	gen := gw.setSpec(sbx, bad, instance("ins_vm", hostproto.PowerRunning))
	r := waitReport(t, gw, "ins_sbx running, ins_bad invalid", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_sbx": hostproto.StateRunning, "ins_bad": hostproto.StateInvalid, "ins_vm": hostproto.StateRunning})
	})
	if s, _ := status(r, "ins_bad"); !strings.Contains(s.Reason, `allowOut[1]`) {
		t.Errorf("ins_bad invalid for %q, want the entry named", s.Reason)
	}

	seed, _ := hv.Seed("ins_sbx")
	if seed.UserData != sbx.UserData || !strings.Contains(seed.VendorData, nocloud.EnvPath) {
		t.Errorf("seed user-data %q, vendor-data %q: want the tenant's and the env", seed.UserData, seed.VendorData)
	}
	if !strings.Contains(seed.VendorData, `GREETING='hello'\nTOKEN='it'\\''s'\n`) {
		t.Errorf("vendor-data lacks the env file:\n%s", seed.VendorData)
	}
	rules, _ := hv.Rules("ins_sbx")
	want := []netpolicy.Rule{
		{Action: netpolicy.Accept, To: netip.MustParsePrefix("10.50.0.1/32")},
		{Action: netpolicy.Drop, To: netip.MustParsePrefix("10.50.0.0/22")},
		{Action: netpolicy.Drop, To: netpolicy.Any},
	}
	if !slices.Equal(rules, want) {
		t.Errorf("ins_sbx enforces %v, want %v", rules, want)
	}
	if rules, ok := hv.Rules("ins_vm"); !ok || rules != nil {
		t.Errorf("an instance without a policy enforces %v", rules)
	}
}
