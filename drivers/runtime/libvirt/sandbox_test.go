package libvirt_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/libvirt"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// bridged returns a runtime whose NICs join a bridge of the test's own,
// which a network filter needs.
func (e *env) bridged() *libvirt.Runtime {
	e.t.Helper()
	return e.runtime(func(c *libvirt.Config) { c.Bridge = e.bridge() })
}

// bridge makes a bridge of the test's own, up, with the addresses (CIDRs)
// given, and returns its name.
func (e *env) bridge(addrs ...string) string {
	e.t.Helper()
	testenv.HostNetwork(e.t)
	name := fmt.Sprintf("bct%d", time.Now().UnixNano()%1_000_000_000)
	ip := func(args ...string) {
		e.t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			e.t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	ip("link", "add", name, "type", "bridge")
	e.t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
	for _, a := range addrs {
		ip("addr", "add", a, "dev", name)
	}
	ip("link", "set", name, "up")
	return name
}

func virsh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("virsh", append([]string{"-c", "qemu:///system"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("virsh %v: %v %s", args, err, out)
	}
	return string(out)
}

// filters lists the network filters named for the instances ids.
func filters(t *testing.T, ids []string) []string {
	t.Helper()
	all := virsh(t, "nwfilter-list")
	var out []string
	for _, id := range ids {
		if strings.Contains(all, "bc-"+id) {
			out = append(out, id)
		}
	}
	return out
}

// TestNetworkFilter: an instance with a network policy gets a network
// filter of its own, defined with the domain, holding its rules, referenced
// from its NIC and in force while it runs; undefining the domain removes it.
// After a churn of instances, with and without policies, in every state,
// no filter of ours is left.
func TestNetworkFilter(t *testing.T) {
	e := setup(t)
	r := e.bridged()
	ctx := context.Background()

	spec := e.spec()
	spec.NetworkPolicy = &hostproto.NetworkPolicy{AllowOut: []string{"10.77.0.1"}, DenyOut: []string{"10.77.0.0/24"}}
	t.Cleanup(func() { r.Undefine(ctx, spec.ID) })
	if err := r.Define(ctx, spec); err != nil {
		t.Fatal(err)
	}
	name := "bc-" + spec.ID
	filter := virsh(t, "nwfilter-dumpxml", name)
	for _, want := range []string{
		`<all state='ESTABLISHED,RELATED'/>`,
		`<udp srcportstart='68' dstportstart='67'/>`,
		`action='accept' direction='out' priority='100'`, `<all dstipaddr='10.77.0.1' dstipmask='32'/>`,
		`action='drop' direction='out' priority='200'`, `<all dstipaddr='10.77.0.0' dstipmask='24'/>`,
		`action='drop' direction='out' priority='300'`, `<all-ipv6/>`,
	} {
		if !strings.Contains(filter, want) {
			t.Errorf("filter lacks %s:\n%s", want, filter)
		}
	}
	if dom := virsh(t, "dumpxml", name); !strings.Contains(dom, "<filterref filter='"+name+"'/>") {
		t.Fatalf("the NIC does not reference the filter:\n%s", dom)
	}
	if err := r.Start(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	if bindings := virsh(t, "nwfilter-binding-list"); !strings.Contains(bindings, name) {
		t.Fatalf("the running domain's filter is not in force:\n%s", bindings)
	}
	if err := r.Undefine(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	if left := filters(t, []string{spec.ID}); len(left) != 0 {
		t.Fatalf("filters left after undefine: %v", left)
	}

	t.Run("churn leaves no filter", func(t *testing.T) {
		var made []string
		for i := range 6 {
			s := e.spec()
			if i%3 != 2 {
				s.NetworkPolicy = &hostproto.NetworkPolicy{AllowInternetAccess: i%2 == 0, DenyOut: []string{"192.0.2.0/24"}}
			}
			made = append(made, s.ID)
			t.Cleanup(func() { r.Undefine(ctx, s.ID) })
			if err := r.Define(ctx, s); err != nil {
				t.Fatal(err)
			}
			switch i % 3 {
			case 1:
				if err := r.Start(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			case 2:
				if err := r.Start(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
				if err := r.Pause(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, id := range made {
			if err := r.Undefine(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if left := filters(t, made); len(left) != 0 {
			t.Fatalf("filters left after the churn: %v", left)
		}
	})
}

// TestPolicyNeedsABridge: without a bridge no filter can hold a policy, so
// an instance with one is not defined rather than run unrestricted.
func TestPolicyNeedsABridge(t *testing.T) {
	e := setup(t)
	r := e.runtime()
	ctx := context.Background()
	spec := e.spec()
	spec.NetworkPolicy = &hostproto.NetworkPolicy{AllowInternetAccess: true}
	t.Cleanup(func() { r.Undefine(ctx, spec.ID) })
	if err := r.Define(ctx, spec); err == nil || !strings.Contains(err.Error(), "bridge") {
		t.Fatalf("Define: %v, want a refusal naming the bridge", err)
	}
	if _, ok := state(t, r, spec.ID); ok {
		t.Fatal("defined all the same")
	}
}

// TestBootedFromConsole: a started guest has booted once its console says
// so, or once it has run for BootTimeout.
func TestBootedFromConsole(t *testing.T) {
	e := setup(t)
	r := e.runtime()
	ctx := context.Background()
	spec := e.spec()
	t.Cleanup(func() { r.Undefine(ctx, spec.ID) })
	if err := r.Define(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	booted := func() bool {
		t.Helper()
		b, err := r.Booted(ctx, spec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if booted() {
		t.Fatal("booted before its console said anything")
	}
	console := filepath.Join(e.dir, "consoles", spec.ID+".log")
	f, err := os.OpenFile(console, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\r\nCloud-init v. 23.1.2 finished at Tue, 01 Dec 2026 11:00:00 +0000. Up 4.20 seconds\r\n")
	f.Close()
	if !booted() {
		t.Fatal("not booted after cloud-init's final message")
	}

	t.Run("after BootTimeout", func(t *testing.T) {
		quick := setup(t)
		r, err := libvirt.New(ctx, libvirt.Config{DomainType: "qemu", StateDir: quick.dir, Images: quick.cache, Logger: quiet, BootTimeout: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		spec := quick.spec()
		t.Cleanup(func() { r.Undefine(ctx, spec.ID) })
		if err := r.Define(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx, spec.ID); err != nil {
			t.Fatal(err)
		}
		if b, err := r.Booted(ctx, spec.ID); err != nil || !b {
			t.Fatalf("Booted = %v, %v past BootTimeout", b, err)
		}
	})
}

// TestStats: a running domain's CPU time and memory are read from libvirt;
// a paused one keeps its stats; a stopped one has none.
func TestStats(t *testing.T) {
	e := setup(t)
	r := e.runtime()
	ctx := context.Background()
	spec := e.spec()
	off := e.spec()
	for _, s := range []hostproto.InstanceSpec{spec, off} {
		t.Cleanup(func() { r.Undefine(ctx, s.ID) })
		if err := r.Define(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Start(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	read := func() map[string]hostproto.Stats {
		t.Helper()
		all, err := r.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	all := read()
	s, ok := all[spec.ID]
	if !ok || s.CPUTimeNs <= 0 || s.MemoryBytes <= 0 {
		t.Fatalf("stats of a running domain: %+v (listed %v)", s, ok)
	}
	if _, ok := all[off.ID]; ok {
		t.Error("a stopped domain has stats")
	}
	if err := r.Pause(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	want(t, r, spec.ID, hostd.DomainPaused)
	if _, ok := read()[spec.ID]; !ok {
		t.Error("a paused domain has no stats")
	}
	other := ids.Encode(ids.Instance, ids.New())
	if _, ok := read()[other]; ok {
		t.Error("stats of a domain that is not ours")
	}
}
