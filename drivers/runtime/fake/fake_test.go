package fake_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
)

// waitFor bounds every wait on a signal.
const waitFor = 5 * time.Second

func spec(id string) hostproto.InstanceSpec {
	return hostproto.InstanceSpec{
		ID:       id,
		Name:     "web-1",
		Power:    hostproto.PowerRunning,
		Vcpus:    2,
		MemoryMB: 2048,
		DiskGB:   20,
		Image:    hostproto.Image{URL: "https://images.example/debian-12.qcow2", SHA256: "abc", Format: "qcow2"},
		SSHKeys:  []string{"ssh-ed25519 AAAAC3Nza you@laptop"},
		Network: &hostproto.Network{
			MAC:     "52:54:00:12:34:56",
			Address: "10.20.0.10/24",
			Gateway: "10.20.0.1",
			DNS:     []string{"10.20.0.2"},
		},
	}
}

// state returns the state and reason Domains lists for id, or "" when it
// lists no such domain.
func state(t *testing.T, h *fake.Hypervisor, id string) (hostd.DomainState, string) {
	t.Helper()
	doms, err := h.Domains(context.Background())
	if err != nil {
		t.Fatalf("domains: %v", err)
	}
	for _, d := range doms {
		if d.ID == id {
			return d.State, d.Reason
		}
	}
	return "", ""
}

func waitChange(t *testing.T, h *fake.Hypervisor) {
	t.Helper()
	select {
	case <-h.Changes():
	case <-time.After(waitFor):
		t.Fatal("Changes was not signalled")
	}
}

func noChange(t *testing.T, h *fake.Hypervisor) {
	t.Helper()
	select {
	case <-h.Changes():
		t.Fatal("Changes was signalled by a call")
	default:
	}
}

// newDomain returns a hypervisor holding domain "ins_a" in the state from
// (stopped, booting, running or paused).
func newDomain(t *testing.T, from string) *fake.Hypervisor {
	t.Helper()
	ctx := context.Background()
	cfg := fake.Config{}
	if from == "booting" {
		cfg.BootDelay = time.Hour
	}
	h := fake.New(cfg)
	t.Cleanup(h.Close)
	if err := h.Define(ctx, spec("ins_a")); err != nil {
		t.Fatal(err)
	}
	if from == "stopped" {
		return h
	}
	if err := h.Start(ctx, "ins_a"); err != nil {
		t.Fatal(err)
	}
	if from == "paused" {
		if err := h.Pause(ctx, "ins_a"); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// TestTransitions checks the table of the package documentation: every
// call in every state.
func TestTransitions(t *testing.T) {
	stop := func(h *fake.Hypervisor, ctx context.Context, id string) error {
		return h.Shutdown(ctx, id, time.Minute)
	}
	calls := map[string]func(*fake.Hypervisor, context.Context, string) error{
		"Start":    (*fake.Hypervisor).Start,
		"Shutdown": stop,
		"Pause":    (*fake.Hypervisor).Pause,
		"Resume":   (*fake.Hypervisor).Resume,
		"Undefine": (*fake.Hypervisor).Undefine,
	}
	tests := []struct {
		from, call string
		want       hostd.DomainState // "" means the domain is gone
		wantErr    string
	}{
		{"stopped", "Start", hostd.DomainRunning, ""},
		{"booting", "Start", hostd.DomainStopped, ""},
		{"running", "Start", hostd.DomainRunning, ""},
		{"paused", "Start", hostd.DomainPaused, "start ins_a: domain is paused"},

		{"stopped", "Shutdown", hostd.DomainStopped, ""},
		{"booting", "Shutdown", hostd.DomainStopped, ""},
		{"running", "Shutdown", hostd.DomainStopped, ""},
		{"paused", "Shutdown", hostd.DomainStopped, ""},

		{"stopped", "Pause", hostd.DomainStopped, "pause ins_a: domain is stopped"},
		{"booting", "Pause", hostd.DomainStopped, "pause ins_a: domain is booting"},
		{"running", "Pause", hostd.DomainPaused, ""},
		{"paused", "Pause", hostd.DomainPaused, ""},

		{"stopped", "Resume", hostd.DomainStopped, "resume ins_a: domain is stopped"},
		{"booting", "Resume", hostd.DomainStopped, "resume ins_a: domain is booting"},
		{"running", "Resume", hostd.DomainRunning, ""},
		{"paused", "Resume", hostd.DomainRunning, ""},

		{"stopped", "Undefine", "", ""},
		{"booting", "Undefine", "", ""},
		{"running", "Undefine", "", ""},
		{"paused", "Undefine", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.call+" "+tt.from, func(t *testing.T) {
			h := newDomain(t, tt.from)
			err := calls[tt.call](h, context.Background(), "ins_a")
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("%s: %v", tt.call, err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("%s: error %v, want %q", tt.call, err, tt.wantErr)
			}
			if got, _ := state(t, h, "ins_a"); got != tt.want {
				t.Errorf("state %q, want %q", got, tt.want)
			}
			noChange(t, h)
		})
	}
}

func TestUnknownDomain(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Config{})
	calls := map[string]func() error{
		"start":    func() error { return h.Start(ctx, "ins_x") },
		"shutdown": func() error { return h.Shutdown(ctx, "ins_x", time.Minute) },
		"pause":    func() error { return h.Pause(ctx, "ins_x") },
		"resume":   func() error { return h.Resume(ctx, "ins_x") },
		"crash":    func() error { return h.Crash("ins_x") },
		"destroy":  func() error { return h.DestroyByHand("ins_x") },
	}
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			err := call()
			if !errors.Is(err, fake.ErrNoDomain) || err.Error() != op+" ins_x: no such domain" {
				t.Errorf("error %v, want %q wrapping ErrNoDomain", err, op+" ins_x: no such domain")
			}
		})
	}
	t.Run("undefine", func(t *testing.T) {
		if err := h.Undefine(ctx, "ins_x"); err != nil {
			t.Errorf("undefine of an unknown domain: %v", err)
		}
	})
}

func TestDefine(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Config{})

	first := spec("ins_a")
	if err := h.Define(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got, _ := state(t, h, "ins_a"); got != hostd.DomainStopped {
		t.Errorf("defined domain is %q, want stopped", got)
	}
	if overlay, _ := h.Overlay("ins_a"); overlay != "/var/lib/better-compute/overlays/ins_a.qcow2" {
		t.Errorf("overlay %q", overlay)
	}

	t.Run("keeps the caller's slices apart", func(t *testing.T) {
		first.SSHKeys[0] = "changed"
		if got, _ := h.Spec("ins_a"); got.SSHKeys[0] == "changed" {
			t.Error("the domain's spec shares the caller's slice")
		}
	})

	t.Run("is idempotent", func(t *testing.T) {
		if err := h.Start(ctx, "ins_a"); err != nil {
			t.Fatal(err)
		}
		other := spec("ins_a")
		other.MemoryMB = 4096
		if err := h.Define(ctx, other); err != nil {
			t.Fatalf("define of an existing domain: %v", err)
		}
		if got, _ := h.Spec("ins_a"); got.MemoryMB != 2048 {
			t.Errorf("define of an existing domain changed its spec: %d MiB", got.MemoryMB)
		}
		if got, _ := state(t, h, "ins_a"); got != hostd.DomainRunning {
			t.Errorf("define of an existing domain changed its state to %q", got)
		}
		doms, _ := h.Domains(ctx)
		if len(doms) != 1 {
			t.Errorf("%d domains, want 1", len(doms))
		}
	})

	t.Run("refuses an empty id", func(t *testing.T) {
		if err := h.Define(ctx, spec("")); err == nil {
			t.Error("define with an empty id succeeded")
		}
	})

	t.Run("undefine removes overlay and seed", func(t *testing.T) {
		if err := h.Undefine(ctx, "ins_a"); err != nil {
			t.Fatal(err)
		}
		_, specOK := h.Spec("ins_a")
		_, seedOK := h.Seed("ins_a")
		_, overlayOK := h.Overlay("ins_a")
		if specOK || seedOK || overlayOK {
			t.Errorf("after undefine: spec %v, seed %v, overlay %v; want none", specOK, seedOK, overlayOK)
		}
	})
}

func TestCalls(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Config{})
	h.Define(ctx, spec("ins_a"))
	h.Define(ctx, spec("ins_a"))
	h.Start(ctx, "ins_a")
	h.Start(ctx, "ins_a")
	h.Pause(ctx, "ins_a")
	h.Resume(ctx, "ins_a")
	h.Shutdown(ctx, "ins_a", time.Minute)
	h.Pause(ctx, "ins_a") // fails: stopped
	h.Undefine(ctx, "ins_a")
	h.Undefine(ctx, "ins_a")

	want := fake.Calls{Define: 2, Start: 2, Shutdown: 1, Pause: 2, Resume: 1, Undefine: 2}
	if got := h.Calls("ins_a"); got != want {
		t.Errorf("calls %+v, want %+v", got, want)
	}
	if got := h.Calls("ins_b"); got != (fake.Calls{}) {
		t.Errorf("calls of an untouched instance %+v, want none", got)
	}
}

func TestBootDelay(t *testing.T) {
	ctx := context.Background()

	t.Run("running after the delay, with a signal", func(t *testing.T) {
		h := fake.New(fake.Config{BootDelay: 20 * time.Millisecond})
		defer h.Close()
		h.Define(ctx, spec("ins_a"))
		if err := h.Start(ctx, "ins_a"); err != nil {
			t.Fatal(err)
		}
		if got, _ := state(t, h, "ins_a"); got != hostd.DomainStopped {
			t.Errorf("booting domain is %q, want stopped", got)
		}
		waitChange(t, h)
		if got, _ := state(t, h, "ins_a"); got != hostd.DomainRunning {
			t.Errorf("booted domain is %q, want running", got)
		}
	})

	t.Run("a boot cut short does not finish a later one", func(t *testing.T) {
		h := fake.New(fake.Config{BootDelay: 20 * time.Millisecond})
		defer h.Close()
		h.Define(ctx, spec("ins_a"))
		h.Start(ctx, "ins_a")
		if err := h.Shutdown(ctx, "ins_a", time.Minute); err != nil {
			t.Fatal(err)
		}
		h.Start(ctx, "ins_a")
		waitChange(t, h)
		if got, _ := state(t, h, "ins_a"); got != hostd.DomainRunning {
			t.Errorf("booted domain is %q, want running", got)
		}
		// One boot completed, so one signal; the first boot's timer was
		// stopped with its shutdown.
		noChange(t, h)
	})

	t.Run("no start after close", func(t *testing.T) {
		h := fake.New(fake.Config{BootDelay: time.Hour})
		h.Define(ctx, spec("ins_a"))
		h.Start(ctx, "ins_a")
		h.Close()
		h.Define(ctx, spec("ins_b"))
		if err := h.Start(ctx, "ins_b"); err == nil {
			t.Error("start after close succeeded")
		}
		if got, _ := state(t, h, "ins_a"); got != hostd.DomainStopped {
			t.Errorf("domain booting at close is %q, want stopped", got)
		}
	})
}

func TestFailureInjection(t *testing.T) {
	ctx := context.Background()

	t.Run("define", func(t *testing.T) {
		h := fake.New(fake.Config{})
		h.FailDefine("ins_a", "disk full")
		err := h.Define(ctx, spec("ins_a"))
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("define: %v, want an error with the reason", err)
		}
		if _, ok := h.Spec("ins_a"); ok {
			t.Error("a failed define created the domain")
		}
		if err := h.Define(ctx, spec("ins_b")); err != nil {
			t.Errorf("define of another instance: %v", err)
		}
		h.ClearFailures()
		if err := h.Define(ctx, spec("ins_a")); err != nil {
			t.Errorf("define after ClearFailures: %v", err)
		}
	})

	t.Run("start", func(t *testing.T) {
		h := fake.New(fake.Config{})
		h.Define(ctx, spec("ins_a"))
		h.FailStart("ins_a", "no memory")
		err := h.Start(ctx, "ins_a")
		if err == nil || !strings.Contains(err.Error(), "no memory") {
			t.Fatalf("start: %v, want an error with the reason", err)
		}
		if got, _ := state(t, h, "ins_a"); got != hostd.DomainStopped {
			t.Errorf("after a failed start the domain is %q, want stopped", got)
		}
		h.ClearFailures()
		if err := h.Start(ctx, "ins_a"); err != nil {
			t.Errorf("start after ClearFailures: %v", err)
		}
	})

	t.Run("all defines and starts", func(t *testing.T) {
		h := fake.New(fake.Config{})
		h.Define(ctx, spec("ins_a"))
		h.FailAllDefines("host in maintenance")
		h.FailAllStarts("host in maintenance")
		for _, err := range []error{h.Define(ctx, spec("ins_b")), h.Start(ctx, "ins_a")} {
			if err == nil || !strings.Contains(err.Error(), "host in maintenance") {
				t.Errorf("got %v, want an error with the reason", err)
			}
		}
		h.ClearFailures()
		if err := h.Start(ctx, "ins_a"); err != nil {
			t.Errorf("start after ClearFailures: %v", err)
		}
	})
}

func TestSeed(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Config{})

	t.Run("documents", func(t *testing.T) {
		h.Define(ctx, spec("ins_a"))
		seed, ok := h.Seed("ins_a")
		if !ok {
			t.Fatal("no seed")
		}
		wantMeta := `instance-id: "ins_a"
local-hostname: "web-1"
public-keys:
  - "ssh-ed25519 AAAAC3Nza you@laptop"
`
		if seed.MetaData != wantMeta {
			t.Errorf("meta-data:\n%s\nwant:\n%s", seed.MetaData, wantMeta)
		}
		if seed.UserData != "#cloud-config\n" {
			t.Errorf("user-data without user data: %q, want an empty cloud-config", seed.UserData)
		}
		wantNet := `version: 2
ethernets:
  eth0:
    match:
      macaddress: "52:54:00:12:34:56"
    set-name: eth0
    addresses:
      - "10.20.0.10/24"
    routes:
      - to: "0.0.0.0/0"
        via: "10.20.0.1"
    nameservers:
      addresses:
        - "10.20.0.2"
`
		if seed.NetworkConfig != wantNet {
			t.Errorf("network-config:\n%s\nwant:\n%s", seed.NetworkConfig, wantNet)
		}
	})

	t.Run("user data is kept as it is", func(t *testing.T) {
		s := spec("ins_b")
		s.UserData = "#!/bin/sh\necho hello > /tmp/hello\n"
		h.Define(ctx, s)
		seed, _ := h.Seed("ins_b")
		if seed.UserData != s.UserData {
			t.Errorf("user-data %q, want the user data %q", seed.UserData, s.UserData)
		}
		if !strings.Contains(seed.MetaData, `"ssh-ed25519 AAAAC3Nza you@laptop"`) {
			t.Errorf("meta-data lost the key beside user data:\n%s", seed.MetaData)
		}
	})

	t.Run("no network, no network-config", func(t *testing.T) {
		s := spec("ins_c")
		s.Network = nil
		h.Define(ctx, s)
		if seed, _ := h.Seed("ins_c"); seed.NetworkConfig != "" {
			t.Errorf("network-config without a network:\n%s", seed.NetworkConfig)
		}
	})

	t.Run("values are quoted", func(t *testing.T) {
		s := spec("ins_d")
		s.SSHKeys = []string{`ssh-ed25519 AAAA "me": #laptop`}
		h.Define(ctx, s)
		seed, _ := h.Seed("ins_d")
		if !strings.Contains(seed.MetaData, `  - "ssh-ed25519 AAAA \"me\": #laptop"`+"\n") {
			t.Errorf("key not quoted:\n%s", seed.MetaData)
		}
	})
}

func TestCrash(t *testing.T) {
	ctx := context.Background()
	h := newDomain(t, "running")
	if err := h.Crash("ins_a"); err != nil {
		t.Fatal(err)
	}
	waitChange(t, h)
	if got, reason := state(t, h, "ins_a"); got != hostd.DomainStopped || reason != fake.CrashReason {
		t.Errorf("crashed domain is %q (%q), want stopped (%q)", got, reason, fake.CrashReason)
	}
	if err := h.Crash("ins_a"); err == nil {
		t.Error("crash of a stopped domain succeeded")
	}
	if err := h.Start(ctx, "ins_a"); err != nil {
		t.Fatal(err)
	}
	if got, reason := state(t, h, "ins_a"); got != hostd.DomainRunning || reason != "" {
		t.Errorf("restarted domain is %q (%q), want running without a reason", got, reason)
	}

	t.Run("while booting", func(t *testing.T) {
		h := newDomain(t, "booting")
		if err := h.Crash("ins_a"); err != nil {
			t.Fatal(err)
		}
		waitChange(t, h)
		if got, reason := state(t, h, "ins_a"); got != hostd.DomainStopped || reason != fake.CrashReason {
			t.Errorf("domain crashed while booting is %q (%q)", got, reason)
		}
	})
}

func TestDestroyByHand(t *testing.T) {
	h := newDomain(t, "running")
	if err := h.DestroyByHand("ins_a"); err != nil {
		t.Fatal(err)
	}
	waitChange(t, h)
	if got, _ := state(t, h, "ins_a"); got != "" {
		t.Errorf("destroyed domain is listed as %q", got)
	}
	if _, ok := h.Seed("ins_a"); ok {
		t.Error("destroyed domain kept its seed")
	}
	if got := h.Calls("ins_a"); got.Undefine != 0 {
		t.Errorf("destroy by hand counted as %d undefines", got.Undefine)
	}
}

func TestChangesNeverBlocks(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Config{})
	for _, id := range []string{"ins_a", "ins_b", "ins_c"} {
		h.Define(ctx, spec(id))
		h.Start(ctx, id)
		if err := h.Crash(id); err != nil { // nobody reads Changes
			t.Fatal(err)
		}
	}
	if n := len(h.Changes()); n != 1 {
		t.Errorf("%d pending signals, want 1", n)
	}
}

func TestInventory(t *testing.T) {
	ctx := context.Background()
	got, _ := fake.New(fake.Config{}).Inventory(ctx)
	if got.Vcpus != 32 || got.MemoryMB != 65536 || got.DiskGB != 1000 || len(got.GPUs) != 0 {
		t.Errorf("default inventory %+v", got)
	}
	gpus := []hostproto.GPU{{Address: "0000:01:00.0", Vendor: "10de", Model: "2204"}}
	got, _ = fake.New(fake.Config{Inventory: hostproto.Inventory{Vcpus: 8, GPUs: gpus}}).Inventory(ctx)
	if got.Vcpus != 8 || got.MemoryMB != 65536 || len(got.GPUs) != 1 || got.GPUs[0] != gpus[0] {
		t.Errorf("inventory %+v: want 8 vCPUs, default memory and the GPU", got)
	}
}

// TestConcurrent is for the race detector.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Config{BootDelay: time.Millisecond})
	defer h.Close()
	var wg sync.WaitGroup
	for _, id := range []string{"ins_a", "ins_b", "ins_c", "ins_d"} {
		wg.Go(func() {
			for range 50 {
				h.Define(ctx, spec(id))
				h.Start(ctx, id)
				h.Domains(ctx)
				h.Crash(id)
				h.Shutdown(ctx, id, time.Minute)
				h.Undefine(ctx, id)
			}
		})
	}
	wg.Wait()
	if doms, _ := h.Domains(ctx); len(doms) != 0 {
		t.Errorf("%d domains left", len(doms))
	}
}
