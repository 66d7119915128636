package hetzner

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/cloudtest"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/internal/testenv"
)

const token = "s3cret-token-value"

// env is a driver talking to an emulator through the real hcloud-go client.
type env struct {
	emu *hetznertest.Emulator
	d   *Driver
	cfg Config
}

// setup starts an emulator (ecfg, with the test's token) behind httptest
// and a driver on it; opts adjust the driver's Config.
func setup(t testing.TB, ecfg hetznertest.Config, opts ...func(*Config)) env {
	t.Helper()
	ecfg.Token = token
	if ecfg.ActionDuration == 0 {
		ecfg.ActionDuration = 20 * time.Millisecond
	}
	e := hetznertest.New(ecfg)
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	cfg := Config{
		Token:           token,
		Endpoint:        srv.URL + "/v1",
		Timeout:         2 * time.Second,
		PollInterval:    5 * time.Millisecond,
		ShutdownTimeout: 300 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env{emu: e, d: d, cfg: cfg}
}

func request(instance, name string) cloud.CreateRequest {
	return cloud.CreateRequest{
		InstanceID: instance, Name: name, ServerType: "cx22", Image: "ubuntu-24.04", PowerOn: true,
	}
}

// status returns the status List reports for a server, or "" if absent.
func (e env) status(t *testing.T, id string) cloud.Status {
	t.Helper()
	servers, err := e.d.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, s := range servers {
		if s.ID == id {
			return s.Status
		}
	}
	return ""
}

// running makes a running server carrying instance's label, behind the
// driver's back.
func (e env) running(t *testing.T, instance string) string {
	t.Helper()
	id, err := e.emu.AddServer("srv-"+instance, map[string]string{cloud.Label: instance})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(id)
}

func wantKind(t *testing.T, err error, kind cloud.Kind) *cloud.Error {
	t.Helper()
	var pe *cloud.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *cloud.Error", err, err)
	}
	if pe.Kind != kind {
		t.Fatalf("kind = %v, want %v (error %v)", pe.Kind, kind, err)
	}
	return pe
}

func TestCreate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		powerOn bool
		final   cloud.Status
	}{
		{"power on", true, cloud.StatusRunning},
		{"stay off", false, cloud.StatusStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const d = time.Second // the emulator's ActionDuration, on clock
			clock := testenv.NewClock()
			e := setup(t, hetznertest.Config{ActionDuration: d, Now: clock.Now})
			ctx := context.Background()
			req := request("7c1e2f9a-3b4d-4e5f-8a6b-1c2d3e4f5a6b", "web-1")
			req.PowerOn = tc.powerOn
			s, err := e.d.Create(ctx, req)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if s.InstanceID != req.InstanceID || s.Status != cloud.StatusStarting || len(s.Addresses) != 2 {
				t.Errorf("Create = %+v", s)
			}
			if got := e.status(t, s.ID); got != cloud.StatusStarting {
				t.Errorf("List right after Create: status %q, want starting", got)
			}
			clock.Advance(2 * d)
			if got := e.status(t, s.ID); got != tc.final {
				t.Errorf("List after the create's actions: status %q, want %q", got, tc.final)
			}
			servers := e.emu.Servers()
			if len(servers) != 1 || servers[0].Labels[cloud.Label] != req.InstanceID || servers[0].Name != "web-1" {
				t.Errorf("emulator has %+v", servers)
			}
		})
	}
}

func TestCreateLocation(t *testing.T) {
	e := setup(t, hetznertest.Config{}, func(c *Config) { c.Location = "hel1" })
	if _, err := e.d.Create(context.Background(), request("i-1", "a")); err != nil {
		t.Fatal(err)
	}
	if got := e.emu.Servers()[0].Location; got != "hel1" {
		t.Errorf("location = %q, want hel1", got)
	}
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ignore    bool
		poweroffs int
	}{
		{"ACPI shutdown", false, 0},
		{"shutdown ignored, powered off", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, hetznertest.Config{IgnoreShutdown: tc.ignore})
			id := e.running(t, "i-1")
			ctx := context.Background()
			start := time.Now()
			if got, err := e.d.Stop(ctx, cloud.Ref{ID: id}); err != nil || got != cloud.StatusStopping {
				t.Fatalf("Stop = %q, %v; want stopping", got, err)
			}
			// Stop again, as the reconciler does when a sweep lists the
			// server still running: no call until the shutdown's time is up,
			// then a poweroff.
			testenv.Eventually(t, 5*time.Second, "off", func() bool {
				if _, err := e.d.Stop(ctx, cloud.Ref{ID: id}); err != nil {
					t.Fatalf("Stop again: %v", err)
				}
				return e.emu.Servers()[0].Status == "off"
			})
			calls := e.emu.Faults().Calls()
			if n := calls["POST /v1/servers/{id}/actions/shutdown"]; n != 1 {
				t.Errorf("shutdown calls = %d, want 1 (%v)", n, calls)
			}
			if n := calls["POST /v1/servers/{id}/actions/poweroff"]; n != tc.poweroffs {
				t.Errorf("poweroff calls = %d, want %d (%v)", n, tc.poweroffs, calls)
			}
			if tc.ignore && time.Since(start) < e.cfg.ShutdownTimeout {
				t.Errorf("powered off after %v, before the shutdown timeout", time.Since(start))
			}
		})
	}
}

func TestStart(t *testing.T) {
	e := setup(t, hetznertest.Config{})
	ctx := context.Background()
	s, err := e.d.Create(ctx, cloud.CreateRequest{InstanceID: "i-1", Name: "a", ServerType: "cpx11", Image: "debian-12"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "stopped", func() bool { return e.status(t, s.ID) == cloud.StatusStopped })
	if got, err := e.d.Start(ctx, cloud.Ref{ID: s.ID}); err != nil || got != cloud.StatusStarting {
		t.Fatalf("Start = %q, %v; want starting", got, err)
	}
	// A Start repeated while the first is under way makes no call.
	e.emu.Faults().Reset()
	if _, err := e.d.Start(ctx, cloud.Ref{ID: s.ID}); err != nil {
		t.Fatal(err)
	}
	if total, _ := e.emu.Faults().Total(); total != 0 {
		t.Errorf("a repeated Start made %d calls", total)
	}
	testenv.Eventually(t, 5*time.Second, "running", func() bool { return e.status(t, s.ID) == cloud.StatusRunning })
}

func TestDelete(t *testing.T) {
	e := setup(t, hetznertest.Config{})
	ctx := context.Background()
	id := e.running(t, "i-1")
	if err := e.d.Delete(ctx, cloud.Ref{ID: id}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if servers, err := e.d.List(ctx); err != nil || len(servers) != 0 {
		t.Errorf("List after Delete = %v, %v", servers, err)
	}
	if err := e.d.Delete(ctx, cloud.Ref{ID: id}); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	for name, op := range map[string]func(context.Context, cloud.Ref) (cloud.Status, error){"Start": e.d.Start, "Stop": e.d.Stop} {
		t.Run(name+" on deleted", func(t *testing.T) {
			_, err := op(ctx, cloud.Ref{ID: id})
			wantKind(t, err, cloud.NotFound)
		})
	}
	t.Run("behind our back", func(t *testing.T) {
		id := e.running(t, "i-2")
		e.emu.DeleteServer(mustID(t, id))
		_, err := e.d.Start(ctx, cloud.Ref{ID: id})
		wantKind(t, err, cloud.NotFound)
		if err := e.d.Delete(ctx, cloud.Ref{ID: id}); err != nil {
			t.Errorf("Delete: %v", err)
		}
	})
	t.Run("malformed ID", func(t *testing.T) {
		_, err := e.d.Start(ctx, cloud.Ref{ID: "web-1"})
		wantKind(t, err, cloud.Invalid)
	})
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscan(s, &id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	create := func(e env) error {
		_, err := e.d.Create(ctx, request("i-new", "new"))
		return err
	}
	list := func(e env) error {
		_, err := e.d.List(ctx)
		return err
	}
	for _, tc := range []struct {
		name    string
		arrange func(t *testing.T, e env)
		driver  func(*Config)
		op      func(e env) error
		kind    cloud.Kind
		message string
		retry   time.Duration
		within  time.Duration
	}{
		{
			name:    "server limit",
			arrange: func(t *testing.T, e env) { e.emu.SetServerLimit(1); e.running(t, "i-old") },
			op:      create, kind: cloud.Quota,
			message: "server limit reached: the project may have 1 servers",
		},
		{
			name: "injected 503",
			arrange: func(t *testing.T, e env) {
				e.emu.Faults().Inject(cloudtest.Fault{Match: "GET /v1/servers", Count: 1, Status: 503,
					Body: hetznertest.ErrorBody("unavailable", "service unavailable, try again")})
			},
			op: list, kind: cloud.Retryable, message: "service unavailable, try again",
		},
		{
			name: "injected 502 without a body",
			arrange: func(t *testing.T, e env) {
				e.emu.Faults().Inject(cloudtest.Fault{Match: "GET /v1/servers", Count: 1, Status: 502})
			},
			op: list, kind: cloud.Retryable, message: "HTTP status 502",
		},
		{
			name: "injected 429 with Retry-After",
			arrange: func(t *testing.T, e env) {
				e.emu.Faults().Inject(cloudtest.Fault{Match: "POST /v1/servers", Count: 1, Status: 429,
					Header: http.Header{"Retry-After": {"3"}},
					Body:   hetznertest.ErrorBody("rate_limit_exceeded", "limit of requests per hour reached")})
			},
			op: create, kind: cloud.RateLimited, message: "limit of requests per hour reached", retry: 3 * time.Second,
		},
		{
			name: "stall beyond the timeout",
			arrange: func(t *testing.T, e env) {
				e.emu.Faults().Inject(cloudtest.Fault{Match: "GET /v1/servers", Count: 1, Delay: 2 * time.Second})
			},
			driver: func(c *Config) { c.Timeout = 200 * time.Millisecond },
			op:     list, kind: cloud.Retryable, message: "request timed out", within: time.Second,
		},
		{
			name:    "name taken",
			arrange: func(t *testing.T, e env) { e.emu.AddServer("new", nil) },
			op:      create, kind: cloud.Invalid, message: "server name is already used",
		},
		{
			name: "unknown image",
			op: func(e env) error {
				req := request("i-new", "new")
				req.Image = "windows-95"
				_, err := e.d.Create(ctx, req)
				return err
			},
			kind: cloud.Invalid, message: "invalid input in field 'image'",
		},
		{
			name:   "wrong token",
			driver: func(c *Config) { c.Token = "wrong-" + token },
			op:     create, kind: cloud.Refused, message: "unable to authenticate",
		},
		{
			name: "poweron while locked",
			op: func(e env) error {
				s, err := e.d.Create(ctx, request("i-new", "new"))
				if err != nil {
					return err
				}
				_, err = e.d.Start(ctx, cloud.Ref{ID: s.ID})
				return err
			},
			kind: cloud.Retryable,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []func(*Config)
			if tc.driver != nil {
				opts = append(opts, tc.driver)
			}
			// The emulator's clock stands still: a create action runs
			// until the test ends, so a poweron after it finds the server
			// locked.
			e := setup(t, hetznertest.Config{Now: testenv.NewClock().Now}, opts...)
			if tc.arrange != nil {
				tc.arrange(t, e)
			}
			start := time.Now()
			err := tc.op(e)
			took := time.Since(start)
			pe := wantKind(t, err, tc.kind)
			if tc.message != "" && pe.Message != tc.message {
				t.Errorf("message = %q, want %q", pe.Message, tc.message)
			}
			if pe.RetryAfter != tc.retry {
				t.Errorf("RetryAfter = %v, want %v", pe.RetryAfter, tc.retry)
			}
			if tc.within != 0 && took > tc.within {
				t.Errorf("took %v, want within %v", took, tc.within)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the token appears in %q", err)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	e := setup(t, hetznertest.Config{RateLimit: 3, RefillPerSecond: 0.1})
	ctx := context.Background()
	var err error
	for i := 0; i < 4 && err == nil; i++ {
		_, err = e.d.List(ctx)
	}
	pe := wantKind(t, err, cloud.RateLimited)
	// One token takes 10s at 0.1 a second.
	if pe.RetryAfter < 9*time.Second || pe.RetryAfter > 10*time.Second {
		t.Errorf("RetryAfter = %v, want about 10s", pe.RetryAfter)
	}
	if b := e.d.Budget(); b.Limit != 3 || b.Remaining != 0 {
		t.Errorf("Budget = %+v", b)
	}
}

func TestRetryAfterFromReset(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"Retry-After", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"Hetzner's bucket empty", http.Header{
			"Ratelimit-Limit": {"3600"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"1700003600"},
		}, time.Second},
		{"slow bucket", http.Header{
			"Ratelimit-Limit": {"10"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"1700000100"},
		}, 10 * time.Second},
		{"no headers", http.Header{}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &hcloud.Response{Response: &http.Response{Header: tc.header}}
			if got := retryAfter(resp, now); got != tc.want {
				t.Errorf("retryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	e := setup(t, hetznertest.Config{})
	ctx := context.Background()
	if b := e.d.Budget(); b != (cloud.Budget{}) {
		t.Errorf("Budget before any call = %+v", b)
	}
	var last cloud.Budget
	for i := 0; i < 3; i++ {
		if _, err := e.d.List(ctx); err != nil {
			t.Fatal(err)
		}
		b := e.d.Budget()
		if b.Limit != 3600 || b.Reset.Before(time.Now().Add(-time.Second)) {
			t.Errorf("Budget = %+v", b)
		}
		if i > 0 && b.Remaining >= last.Remaining {
			t.Errorf("Remaining went from %d to %d", last.Remaining, b.Remaining)
		}
		last = b
	}
}

func TestListCalls(t *testing.T) {
	for _, tc := range []struct {
		servers, others, calls int
	}{
		{0, 0, 1},
		{50, 3, 1},
		{51, 0, 2},
	} {
		t.Run(fmt.Sprintf("%d servers", tc.servers), func(t *testing.T) {
			e := setup(t, hetznertest.Config{})
			for i := 0; i < tc.servers; i++ {
				e.running(t, fmt.Sprintf("i-%d", i))
			}
			for i := 0; i < tc.others; i++ {
				e.emu.AddServer(fmt.Sprintf("not-ours-%d", i), map[string]string{"team": "x"})
			}
			e.emu.Faults().Reset()
			servers, err := e.d.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(servers) != tc.servers {
				t.Errorf("List returned %d servers, want %d", len(servers), tc.servers)
			}
			if total, _ := e.emu.Faults().Total(); total != tc.calls {
				t.Errorf("List made %d calls, want %d (%v)", total, tc.calls, e.emu.Faults().Calls())
			}
		})
	}
}

func TestFind(t *testing.T) {
	e := setup(t, hetznertest.Config{})
	e.running(t, "i-1")
	id := e.running(t, "i-2")
	e.emu.Faults().Reset()
	got, err := e.d.Find(context.Background(), "i-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id || got[0].InstanceID != "i-2" {
		t.Errorf("Find = %+v", got)
	}
	if total, _ := e.emu.Faults().Total(); total != 1 {
		t.Errorf("Find made %d calls", total)
	}
}

// TestCallsPerMethod measures the calls of each method in the normal case.
func TestCallsPerMethod(t *testing.T) {
	e := setup(t, hetznertest.Config{ActionDuration: 20 * time.Millisecond})
	ctx := context.Background()
	var id string
	steps := []struct {
		name string
		op   func() error
		max  int
	}{
		{"Create", func() error {
			s, err := e.d.Create(ctx, request("i-1", "a"))
			id = s.ID
			return err
		}, 1},
		{"List", func() error { _, err := e.d.List(ctx); return err }, 1},
		{"Stop", func() error {
			testenv.Eventually(t, 5*time.Second, "running", func() bool { return e.emu.Servers()[0].Status == "running" })
			e.emu.Faults().Reset()
			_, err := e.d.Stop(ctx, cloud.Ref{ID: id})
			return err
		}, 1},
		{"Start", func() error {
			testenv.Eventually(t, 5*time.Second, "off", func() bool { return e.emu.Servers()[0].Status == "off" })
			e.emu.Faults().Reset()
			_, err := e.d.Start(ctx, cloud.Ref{ID: id})
			return err
		}, 1},
		{"Delete", func() error { return e.d.Delete(ctx, cloud.Ref{ID: id}) }, 4},
	}
	for _, s := range steps {
		e.emu.Faults().Reset()
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		total, _ := e.emu.Faults().Total()
		t.Logf("%s: %d calls %v", s.name, total, e.emu.Faults().Calls())
		if total > s.max {
			t.Errorf("%s made %d calls, want at most %d", s.name, total, s.max)
		}
	}
}

func TestSSHKeys(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " alice@laptop"
	ctx := context.Background()

	t.Run("empty user data: cloud-config", func(t *testing.T) {
		e := setup(t, hetznertest.Config{})
		req := request("i-1", "a")
		req.SSHKeys = []string{key, key}
		if _, err := e.d.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
		want := "#cloud-config\nssh_authorized_keys:\n  - \"" + key + "\"\n"
		if got := e.emu.Servers()[0].UserData; got != want {
			t.Errorf("user data = %q, want %q", got, want)
		}
		if total, _ := e.emu.Faults().Total(); total != 1 {
			t.Errorf("Create made %d calls, want 1", total)
		}
	})
	t.Run("tenant user data: key resources", func(t *testing.T) {
		e := setup(t, hetznertest.Config{})
		script := "#!/bin/sh\necho hi\n"
		for i, wantPosts := range []int{1, 0} {
			e.emu.Faults().Reset()
			req := request(fmt.Sprintf("i-%d", i), fmt.Sprintf("s-%d", i))
			req.SSHKeys, req.UserData = []string{key}, script
			if _, err := e.d.Create(ctx, req); err != nil {
				t.Fatal(err)
			}
			if n := e.emu.Faults().Calls()["POST /v1/ssh_keys"]; n != wantPosts {
				t.Errorf("create %d: %d key creations, want %d", i, n, wantPosts)
			}
		}
		keys := e.emu.SSHKeys()
		if len(keys) != 1 || keys[0].Fingerprint != ssh.FingerprintLegacyMD5(sp) {
			t.Fatalf("keys = %+v", keys)
		}
		for _, s := range e.emu.Servers() {
			if s.UserData != script || len(s.SSHKeys) != 1 || s.SSHKeys[0] != keys[0].Name {
				t.Errorf("server %+v", s)
			}
		}
	})
	t.Run("key made elsewhere meanwhile", func(t *testing.T) {
		e := setup(t, hetznertest.Config{})
		req := request("i-1", "a")
		req.SSHKeys, req.UserData = []string{key}, "#cloud-config\n"
		if _, err := e.d.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
		// Another driver races us: the key appears between our GET and
		// our POST, which then fails with uniqueness_error.
		e.emu.Faults().Inject(cloudtest.Fault{Match: "GET /v1/ssh_keys", Count: 1, Status: 200,
			Body: `{"ssh_keys":[],"meta":{"pagination":{"page":1,"per_page":25,"last_page":1,"total_entries":0}}}`})
		req = request("i-2", "b")
		req.SSHKeys, req.UserData = []string{key}, "#cloud-config\n"
		if _, err := e.d.Create(ctx, req); err != nil {
			t.Fatalf("Create after a uniqueness error: %v", err)
		}
		if n := len(e.emu.SSHKeys()); n != 1 {
			t.Errorf("%d keys", n)
		}
	})
	for _, bad := range []string{"not a key", `command="ls" ` + key, key + "\n" + key} {
		t.Run("invalid "+bad[:8], func(t *testing.T) {
			e := setup(t, hetznertest.Config{})
			req := request("i-1", "a")
			req.SSHKeys = []string{bad}
			_, err := e.d.Create(ctx, req)
			wantKind(t, err, cloud.Invalid)
			if total, _ := e.emu.Faults().Total(); total != 0 {
				t.Errorf("made %d calls", total)
			}
		})
	}
}

// BenchmarkSweep100 lists a project of 100 of our servers, as one sweep
// does, and reports the calls a sweep makes (pages of 50).
func BenchmarkSweep100(b *testing.B) {
	e := setup(b, hetznertest.Config{RateLimit: 1 << 30, RefillPerSecond: 1 << 30})
	for i := range 100 {
		if _, err := e.emu.AddServer(fmt.Sprintf("s-%03d", i), map[string]string{cloud.Label: fmt.Sprintf("instance-%03d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	e.emu.Faults().Reset()
	for b.Loop() {
		servers, err := e.d.List(context.Background())
		if err != nil || len(servers) != 100 {
			b.Fatalf("List: %d servers, %v", len(servers), err)
		}
	}
	total, _ := e.emu.Faults().Total()
	b.ReportMetric(float64(total)/float64(b.N), "calls/sweep")
}

// TestPollGap: waits on a slow action grow by half up to ten times the
// poll interval, so a 20 s action costs a handful of requests, not 40.
func TestPollGap(t *testing.T) {
	d := &Driver{cfg: Config{PollInterval: 500 * time.Millisecond}}
	var total time.Duration
	polls := 0
	for total < 20*time.Second {
		total += d.pollGap(polls)
		polls++
	}
	if d.pollGap(0) != 500*time.Millisecond || d.pollGap(1) != 750*time.Millisecond || d.pollGap(100) != 5*time.Second {
		t.Fatalf("gaps %v %v %v", d.pollGap(0), d.pollGap(1), d.pollGap(100))
	}
	if polls > 9 {
		t.Fatalf("a 20 s action takes %d polls", polls)
	}
}
