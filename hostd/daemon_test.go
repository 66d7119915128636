package hostd_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
)

// waitFor bounds every wait on the daemon.
const waitFor = 5 * time.Second

// daemon is a running Daemon.
type daemon struct {
	// done receives Run's error when it returns.
	done   chan error
	cancel context.CancelFunc
}

// start runs a Daemon over hv against gw, with a heartbeat of 50 ms unless
// configure says otherwise. It is stopped at the end of the test.
func start(t *testing.T, gw *gateway, hv hostd.Runtime, configure ...func(*hostd.Config)) *daemon {
	t.Helper()
	cfg := hostd.Config{
		ServerURL:         gw.url,
		Credential:        credential,
		Runtime:           hv,
		HeartbeatInterval: 50 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, f := range configure {
		f(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{done: make(chan error, 1), cancel: cancel}
	go func() { d.done <- hostd.New(cfg).Run(ctx) }()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop stops the daemon and waits for Run to return nil. Stopping it again
// does nothing.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(waitFor):
		t.Error("Run did not return after its context ended")
	}
}

func heartbeat(d time.Duration) func(*hostd.Config) {
	return func(c *hostd.Config) { c.HeartbeatInterval = d }
}

func newHypervisor(t *testing.T, cfg fake.Config) *fake.Hypervisor {
	hv := fake.New(cfg)
	t.Cleanup(hv.Close)
	return hv
}

func instance(id string, power hostproto.Power) hostproto.InstanceSpec {
	return hostproto.InstanceSpec{
		ID:       id,
		Name:     strings.TrimPrefix(id, "ins_"),
		Power:    power,
		Vcpus:    1,
		MemoryMB: 1024,
		DiskGB:   10,
		Image:    hostproto.Image{URL: "https://images.example/debian-12.qcow2", SHA256: "abc", Format: "qcow2"},
		SSHKeys:  []string{"ssh-ed25519 AAAAC3Nza you@laptop"},
	}
}

// waitReport returns the first report gw receives that satisfies ok, and
// fails the test after waitFor.
func waitReport(t *testing.T, gw *gateway, what string, ok func(hostproto.Report) bool) hostproto.Report {
	t.Helper()
	return waitOn(t, gw.reports, what, ok)
}

// waitOn returns the first report from reports that satisfies ok, and
// fails the test after waitFor.
func waitOn(t *testing.T, reports chan hostproto.Report, what string, ok func(hostproto.Report) bool) hostproto.Report {
	t.Helper()
	timeout := time.After(waitFor)
	var last *hostproto.Report
	for {
		select {
		case r := <-reports:
			if ok(r) {
				return r
			}
			last = &r
		case <-timeout:
			t.Fatalf("no report with %s within %v; last report: %s", what, waitFor, describe(last))
		}
	}
}

// is reports whether r is of generation gen and says exactly states, ID by
// ID ("" for an instance that must be absent).
func is(r hostproto.Report, gen int64, states map[string]hostproto.State) bool {
	if r.Generation != gen {
		return false
	}
	for id, want := range states {
		if got, _ := status(r, id); got.State != want {
			return false
		}
	}
	return true
}

func status(r hostproto.Report, id string) (hostproto.InstanceStatus, bool) {
	for _, s := range r.Instances {
		if s.ID == id {
			return s, true
		}
	}
	return hostproto.InstanceStatus{}, false
}

func describe(r *hostproto.Report) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("generation %d, instances %+v", r.Generation, r.Instances)
}

func TestConverge(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv)

	first := waitReport(t, gw, "generation 0", func(r hostproto.Report) bool { return r.Generation == 0 })
	if first.Inventory == nil || first.Inventory.Vcpus != 32 {
		t.Errorf("first report's inventory %+v, want the hypervisor's", first.Inventory)
	}
	if len(first.Instances) != 0 {
		t.Errorf("first report lists %+v on an empty host", first.Instances)
	}

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerRunning))
	r := waitReport(t, gw, "both running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_b": hostproto.StateRunning})
	})
	if len(r.Instances) != 2 || r.Inventory == nil {
		t.Errorf("report %+v, want two instances and the inventory", r)
	}
	for _, id := range []string{"ins_a", "ins_b"} {
		if got := hv.Calls(id); got != (fake.Calls{Define: 1, Start: 1}) {
			t.Errorf("%s: calls %+v, want one define and one start", id, got)
		}
		if spec, _ := hv.Spec(id); spec.Name != strings.TrimPrefix(id, "ins_") {
			t.Errorf("%s defined with name %q", id, spec.Name)
		}
	}
}

func TestStopAndRemove(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv)

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerRunning))
	waitReport(t, gw, "both running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_b": hostproto.StateRunning})
	})

	gen = gw.setSpec(instance("ins_a", hostproto.PowerStopped))
	waitReport(t, gw, "ins_a stopped, ins_b gone", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateStopped, "ins_b": ""})
	})
	if got := hv.Calls("ins_a"); got.Shutdown != 1 {
		t.Errorf("ins_a: %d shutdowns, want 1", got.Shutdown)
	}
	if got := hv.Calls("ins_b"); got.Undefine != 1 {
		t.Errorf("ins_b: %d undefines, want 1", got.Undefine)
	}
	if _, ok := hv.Seed("ins_b"); ok {
		t.Error("ins_b kept its seed")
	}
}

// TestPower walks one instance through every power change.
func TestPower(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv)

	steps := []struct {
		power hostproto.Power
		want  hostproto.State
	}{
		{hostproto.PowerRunning, hostproto.StateRunning},
		{hostproto.PowerPaused, hostproto.StatePaused},   // Pause
		{hostproto.PowerRunning, hostproto.StateRunning}, // Resume
		{hostproto.PowerStopped, hostproto.StateStopped}, // Shutdown
		{hostproto.PowerPaused, hostproto.StatePaused},   // Start, then Pause
		{hostproto.PowerStopped, hostproto.StateStopped}, // Shutdown of a paused domain
	}
	for _, step := range steps {
		gen := gw.setSpec(instance("ins_a", step.power))
		waitReport(t, gw, fmt.Sprintf("ins_a %s", step.want), func(r hostproto.Report) bool {
			return is(r, gen, map[string]hostproto.State{"ins_a": step.want})
		})
	}
	want := fake.Calls{Define: 1, Start: 2, Pause: 2, Resume: 1, Shutdown: 2}
	if got := hv.Calls("ins_a"); got != want {
		t.Errorf("calls %+v, want %+v", got, want)
	}
}

func TestDefineFailure(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	hv.FailDefine("ins_a", "disk full")
	start(t, gw, hv)

	a := instance("ins_a", hostproto.PowerRunning)
	b := instance("ins_b", hostproto.PowerRunning)
	gen := gw.setSpec(a, b)
	r := waitReport(t, gw, "ins_a failed", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateFailed, "ins_b": hostproto.StateRunning})
	})
	if s, _ := status(r, "ins_a"); !strings.Contains(s.Reason, "disk full") {
		t.Errorf("ins_a failed with reason %q, want the define error", s.Reason)
	}

	// Heartbeats converge again and again; the failed define is not retried.
	for range 3 {
		waitReport(t, gw, "ins_a still failed", func(r hostproto.Report) bool {
			return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateFailed})
		})
	}
	// Nor when another entry of the spec changes.
	gen = gw.setSpec(a, b, instance("ins_c", hostproto.PowerRunning))
	waitReport(t, gw, "ins_c running, ins_a still failed", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateFailed, "ins_c": hostproto.StateRunning})
	})
	if got := hv.Calls("ins_a").Define; got != 1 {
		t.Fatalf("ins_a defined %d times while its entry did not change, want 1", got)
	}

	// A changed entry is tried afresh.
	hv.ClearFailures()
	a.MemoryMB = 2048
	gen = gw.setSpec(a, b)
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
	if got := hv.Calls("ins_a").Define; got != 2 {
		t.Errorf("ins_a defined %d times, want 2", got)
	}

	// A failed instance that leaves the spec leaves the report.
	hv.FailDefine("ins_d", "disk full")
	gen = gw.setSpec(a, b, instance("ins_d", hostproto.PowerRunning))
	waitReport(t, gw, "ins_d failed", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_d": hostproto.StateFailed})
	})
	gen = gw.setSpec(a, b)
	waitReport(t, gw, "ins_d absent", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_d": ""})
	})
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	hv.FailStart("ins_a", "no memory")
	start(t, gw, hv)

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	r := waitReport(t, gw, "ins_a failed", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateFailed})
	})
	if s, _ := status(r, "ins_a"); !strings.Contains(s.Reason, "no memory") {
		t.Errorf("ins_a failed with reason %q, want the start error", s.Reason)
	}
	for range 3 {
		waitReport(t, gw, "ins_a still failed", func(r hostproto.Report) bool {
			return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateFailed})
		})
	}
	if got := hv.Calls("ins_a"); got.Start != 1 || got.Define != 1 {
		t.Errorf("calls %+v, want one define and one start", got)
	}

	// Asked to stop instead, it is what its domain is: stopped.
	gen = gw.setSpec(instance("ins_a", hostproto.PowerStopped))
	waitReport(t, gw, "ins_a stopped", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateStopped})
	})
}

// TestCrashReportedAtOnce: a crash reaches the gateway through Changes, not
// the heartbeat, and the daemon reports it before acting on it.
func TestCrashReportedAtOnce(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv, heartbeat(time.Hour))

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
	if err := hv.Crash("ins_a"); err != nil {
		t.Fatal(err)
	}
	r := waitReport(t, gw, "ins_a stopped", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateStopped})
	})
	if s, _ := status(r, "ins_a"); s.Reason != fake.CrashReason {
		t.Errorf("reason %q, want %q", s.Reason, fake.CrashReason)
	}
	if got := hv.Calls("ins_a").Start; got != 1 {
		t.Errorf("%d starts: the daemon restarted ins_a on the signal, before the heartbeat", got)
	}
}

// TestCrashRestarted: the heartbeat after a crash starts the domain again.
func TestCrashRestarted(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv)

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
	if err := hv.Crash("ins_a"); err != nil {
		t.Fatal(err)
	}
	waitReport(t, gw, "ins_a running after a second start", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning}) && hv.Calls("ins_a").Start == 2
	})
}

// TestDestroyedByHandReportedAtOnce: a domain destroyed behind the daemon's
// back is reported absent through Changes.
func TestDestroyedByHandReportedAtOnce(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv, heartbeat(time.Hour))

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
	if err := hv.DestroyByHand("ins_a"); err != nil {
		t.Fatal(err)
	}
	waitReport(t, gw, "ins_a absent", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": ""})
	})
}

// TestBootReportedAtOnce: a domain that finishes booting is reported running
// through Changes: the converge that started it saw it still booting
// (stopped), and there is no heartbeat.
func TestBootReportedAtOnce(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{BootDelay: 100 * time.Millisecond})
	start(t, gw, hv, heartbeat(time.Hour))

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
}

// TestRestartAdopts: a new daemon over the same hypervisor adopts its
// domains and defines and starts nothing twice.
func TestRestartAdopts(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	first := start(t, gw, hv)

	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning), instance("ins_b", hostproto.PowerStopped))
	want := map[string]hostproto.State{"ins_a": hostproto.StateRunning, "ins_b": hostproto.StateStopped}
	waitReport(t, gw, "ins_a running, ins_b stopped", func(r hostproto.Report) bool { return is(r, gen, want) })
	first.stop(t)

	start(t, gw, hv)
	for range 4 { // the converge of the spec and three heartbeats
		waitReport(t, gw, "the spec", func(r hostproto.Report) bool { return is(r, gen, want) })
	}
	if got := hv.Calls("ins_a"); got != (fake.Calls{Define: 1, Start: 1}) {
		t.Errorf("ins_a: calls %+v, want one define and one start", got)
	}
	if got := hv.Calls("ins_b"); got != (fake.Calls{Define: 1}) {
		t.Errorf("ins_b: calls %+v, want one define", got)
	}
}

// TestNothingUndefinedBeforeTheFirstSpec: until it is told what to run, the
// daemon leaves the host's domains alone.
func TestNothingUndefinedBeforeTheFirstSpec(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw := newGateway(t)
	hv := newHypervisor(t, fake.Config{})
	if err := hv.Define(ctx, instance("ins_old", hostproto.PowerRunning)); err != nil {
		t.Fatal(err)
	}
	if err := hv.Start(ctx, "ins_old"); err != nil {
		t.Fatal(err)
	}
	start(t, gw, hv)

	for range 4 { // the first report and three heartbeats
		waitReport(t, gw, "ins_old running at generation 0", func(r hostproto.Report) bool {
			return is(r, 0, map[string]hostproto.State{"ins_old": hostproto.StateRunning})
		})
	}
	if got := hv.Calls("ins_old"); got.Undefine != 0 || got.Shutdown != 0 {
		t.Fatalf("calls %+v before any spec, want none", got)
	}

	gen := gw.setSpec()
	waitReport(t, gw, "ins_old gone", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_old": ""})
	})
	if got := hv.Calls("ins_old").Undefine; got != 1 {
		t.Errorf("%d undefines, want 1", got)
	}
}

// TestGatewayRefusing: a wrong credential (401) and a failing gateway (503)
// are retried with backoff, never in a hot loop, and the daemon recovers
// once the gateway accepts it.
func TestGatewayRefusing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		refuse, allow func(*gateway)
	}{
		{
			name:   "wrong credential",
			refuse: func(g *gateway) { g.setCredential("bch_other") },
			allow:  func(g *gateway) { g.setCredential(credential) },
		},
		{
			name:   "server error",
			refuse: func(g *gateway) { g.setDown(true) },
			allow:  func(g *gateway) { g.setDown(false) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := newGateway(t)
			tt.refuse(gw)
			hv := newHypervisor(t, fake.Config{})
			d := start(t, gw, hv)

			// Four attempts of each kind are apart by at least the first
			// three waits of the backoff: 100, 200 and 400 ms.
			times := map[string][]time.Time{}
			timeout := time.After(waitFor)
			for len(times[hostproto.SpecPath]) < 4 || len(times[hostproto.ReportPath]) < 4 {
				select {
				case r := <-gw.refused:
					times[r.path] = append(times[r.path], r.at)
				case <-timeout:
					t.Fatalf("refused requests after %v: %d spec, %d report; want 4 of each",
						waitFor, len(times[hostproto.SpecPath]), len(times[hostproto.ReportPath]))
				}
			}
			for path, at := range times {
				if spent := at[3].Sub(at[0]); spent < 700*time.Millisecond {
					t.Errorf("%s: 4 attempts within %v, want backoff of at least 700ms", path, spent)
				}
			}
			select {
			case err := <-d.done:
				t.Fatalf("Run returned %v while the gateway refused it", err)
			default:
			}

			tt.allow(gw)
			gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
			waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
				return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
			})
		})
	}
}

// TestLongPollReissued: a long-poll that ends with 204 is simply asked
// again, from the same generation.
func TestLongPollReissued(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	gw.setHold(20 * time.Millisecond)
	hv := newHypervisor(t, fake.Config{})
	start(t, gw, hv, heartbeat(time.Hour))

	waitUnchanged := func(after string) {
		t.Helper()
		timeout := time.After(waitFor)
		for n := 0; n < 3; {
			select {
			case q := <-gw.unchanged:
				if q["wait"] != fmt.Sprint(hostproto.MaxWaitSeconds) {
					t.Errorf("long-poll with wait %q, want %d", q["wait"], hostproto.MaxWaitSeconds)
				}
				if q["after"] == after {
					n++
				}
			case <-timeout:
				t.Fatalf("fewer than 3 long-polls after generation %s ended with 204 within %v", after, waitFor)
			}
		}
	}
	waitUnchanged("0")
	gen := gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
	waitUnchanged("1")
}

func TestRunChecksConfig(t *testing.T) {
	t.Parallel()
	hv := fake.New(fake.Config{})
	tests := []struct {
		name string
		cfg  hostd.Config
	}{
		{"no server", hostd.Config{Credential: credential, Runtime: hv}},
		{"server not a URL", hostd.Config{ServerURL: "127.0.0.1:8080", Credential: credential, Runtime: hv}},
		{"no credential", hostd.Config{ServerURL: "http://127.0.0.1:8080", Runtime: hv}},
		{"no runtime", hostd.Config{ServerURL: "http://127.0.0.1:8080", Credential: credential}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := hostd.New(tt.cfg).Run(context.Background()); err == nil {
				t.Error("Run accepted an incomplete config")
			}
		})
	}
}

// TestNamesItsRuntime: the daemon names its runtime on every request it
// makes, so the gateway can refuse a host of another runtime than its
// pool's.
func TestNamesItsRuntime(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	start(t, gw, newHypervisor(t, fake.Config{}), func(c *hostd.Config) { c.RuntimeName = "fake" })
	waitReport(t, gw, "a first report", func(hostproto.Report) bool { return true })
	seen := 0
	for len(gw.runtimes) > 0 {
		if rt := <-gw.runtimes; rt != "fake" {
			t.Fatalf("a request named runtime %q, want fake", rt)
		}
		seen++
	}
	if seen == 0 {
		t.Fatal("no request recorded before the report arrived")
	}
}
