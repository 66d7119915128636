package fake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
)

// TestBootedAndStats: a fake guest has booted once its domain runs; its
// CPU time grows while it runs and stands still while it is paused; a
// stopped domain has no stats.
func TestBootedAndStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := fake.New(fake.Config{})
	t.Cleanup(h.Close)
	if err := h.Define(ctx, spec("ins_a")); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	booted := func() bool {
		t.Helper()
		b, err := h.Booted(ctx, "ins_a")
		must(err)
		return b
	}
	stats := func() (hostproto.Stats, bool) {
		t.Helper()
		all, err := h.Stats(ctx)
		must(err)
		s, ok := all["ins_a"]
		return s, ok
	}
	if booted() {
		t.Fatal("a stopped domain has booted")
	}
	if s, ok := stats(); ok {
		t.Fatalf("a stopped domain has stats %+v", s)
	}
	must(h.Start(ctx, "ins_a"))
	if !booted() {
		t.Fatal("a running fake domain has not booted")
	}
	first, _ := stats()
	if first.MemoryBytes != 1024<<20 {
		t.Errorf("memory %d, want half of 2048 MiB", first.MemoryBytes)
	}
	for { // CPU time grows while it runs (the clock moves on)
		if s, _ := stats(); s.CPUTimeNs > first.CPUTimeNs {
			break
		}
	}
	must(h.Pause(ctx, "ins_a"))
	paused, ok := stats()
	if again, _ := stats(); !ok || again != paused {
		t.Errorf("a paused domain's stats went from %+v to %+v", paused, again)
	}
	if _, err := h.Booted(ctx, "ins_none"); !errors.Is(err, fake.ErrNoDomain) {
		t.Errorf("Booted of no domain: %v", err)
	}
}

// TestSandboxDefine: Define records a policy's rules, and refuses as the
// instance's own fault a policy or an env no host could honour.
func TestSandboxDefine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := fake.New(fake.Config{})
	t.Cleanup(h.Close)
	good := spec("ins_good")
	good.Env = map[string]string{"A": "1"}
	good.NetworkPolicy = &hostproto.NetworkPolicy{AllowInternetAccess: true, DenyOut: []string{"10.0.0.0/8"}}
	if err := h.Define(ctx, good); err != nil {
		t.Fatal(err)
	}
	if rules, _ := h.Rules("ins_good"); len(rules) != 2 || rules[0].String() != "drop 10.0.0.0/8" || rules[1].String() != "accept 0.0.0.0/0" {
		t.Errorf("rules %v", rules)
	}
	good.NetworkPolicy.DenyOut[0] = "changed"
	if s, _ := h.Spec("ins_good"); s.NetworkPolicy.DenyOut[0] != "10.0.0.0/8" {
		t.Error("the recorded spec shares the caller's policy")
	}
	badEnv := spec("ins_env")
	badEnv.Env = map[string]string{"NOT-A-NAME": "x"}
	badPolicy := spec("ins_policy")
	badPolicy.NetworkPolicy = &hostproto.NetworkPolicy{DenyOut: []string{"fe80::1"}}
	for _, s := range []hostproto.InstanceSpec{badEnv, badPolicy} {
		if err := h.Define(ctx, s); !errors.Is(err, hostd.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", s.ID, err)
		}
		if _, ok := h.Spec(s.ID); ok {
			t.Errorf("%s defined all the same", s.ID)
		}
	}
}
