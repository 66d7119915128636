package reconciler_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/drivers/cloud/cloudtest"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/reconciler"
)

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}

// about counts the records at level that name the account.
func (l *logRecorder) about(account uuid.UUID, level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "account" && a.Value.Resolve().String() == ids.Encode(ids.ProviderAccount, account) && r.Level == level {
				n++
			}
			return true
		})
	}
	return n
}

// arrivals records when the servers were listed.
type arrivals struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *arrivals) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/servers" {
			a.mu.Lock()
			a.times = append(a.times, time.Now())
			a.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (a *arrivals) list() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.times...)
}

// TestRefusedAccountBacksOff: the sweeps of an account whose token the
// provider refuses wait twice as long after each refusal, and the refusal
// is logged once, not at every sweep; once its token is rotated it is
// swept again at once, and that is logged.
func TestRefusedAccountBacksOff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var seen arrivals
	p := e.hetzner(seen.wrap)
	acct := e.account("wrong", p, "wrong-"+hetznertest.DefaultToken)
	e.providerPool("cloud", acct)
	logs := &logRecorder{}
	const base = 20 * time.Millisecond
	e.reconcilers(1, func(c *reconciler.Config) {
		withProviders(c)
		c.SweepInterval, c.Logger = base, slog.New(logs)
	})
	testenv.Eventually(t, 30*time.Second, "six refused sweeps", func() bool { return len(seen.list()) >= 6 })
	times := seen.list()
	for n := 1; n < 6; n++ {
		// After the nth refusal the sweep waits base·2ⁿ⁻¹, from after the
		// nth list arrived.
		want := base << (n - 1)
		if gap := times[n].Sub(times[n-1]); gap < want {
			t.Errorf("sweep %d came %v after the refused sweep %d, want at least %v", n+1, gap, n, want)
		}
	}
	if n := logs.about(acct, slog.LevelWarn); n != 1 {
		t.Errorf("the refusal was logged %d times, want once", n)
	}

	token := hetznertest.DefaultToken
	_, err := e.svc.UpdateProviderAccount(e.ctx, control.UpdateProviderAccountInput{ID: acct, Credentials: &token})
	e.check(err)
	testenv.Eventually(t, 30*time.Second, "the accepted account's recovery logged", func() bool { return logs.about(acct, slog.LevelInfo) == 1 })
	swept := len(seen.list())
	testenv.Eventually(t, 30*time.Second, "three more sweeps", func() bool { return len(seen.list()) >= swept+3 })
	if n := logs.about(acct, slog.LevelWarn); n != 1 {
		t.Errorf("%d warnings about the account, want the one refusal", n)
	}
}

// TestTransientSweepFailuresLoseNothing: sweeps that fail transiently (5xx
// with and without the API's body, connections reset) neither hold the
// account's sweeps back nor make its running instance LOST.
func TestTransientSweepFailuresLoseNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var resets atomic.Int64
	p := e.hetzner(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == "/v1/servers" && resets.Add(-1) >= 0 {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	account := e.account("cloud", p, hetznertest.DefaultToken)
	e.providerPool("cloud", account)
	logs := &logRecorder{}
	e.reconcilers(1, func(c *reconciler.Config) { withProviders(c); c.Logger = slog.New(logs) })
	id := e.create("web-1")
	state := func() string {
		var s string
		e.check(e.db.QueryRow(context.Background(), "SELECT state FROM instances WHERE id = $1", id).Scan(&s))
		return s
	}
	e.eventually(30*time.Second, "RUNNING", func() bool { return state() == "RUNNING" })

	// Every event from here on: none may say LOST.
	sub := e.rdb.PSubscribe(context.Background(), e.prefix+"events:*")
	if _, err := sub.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	var lost atomic.Value
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for m := range sub.Channel() {
			if strings.Contains(m.Payload, `"LOST"`) {
				lost.Store(m.Payload)
			}
		}
	}()

	for _, f := range []cloudtest.Fault{
		{Status: 503, Body: hetznertest.ErrorBody("unavailable", "try again"), Count: 3},
		{Status: 502, Body: "<html>bad gateway</html>", Count: 2},
		{Status: 500, Body: hetznertest.ErrorBody("server_error", "oops"), Count: 2},
	} {
		f.Match = "GET /v1/servers"
		p.Faults().Inject(f)
	}
	testenv.Eventually(t, 30*time.Second, "the failures served", func() bool { _, failed := p.Faults().Total(); return failed == 7 })
	resets.Store(3)
	testenv.Eventually(t, 30*time.Second, "the resets served", func() bool { return resets.Load() < 0 })
	listed := p.sweeps()
	testenv.Eventually(t, 30*time.Second, "three good sweeps after the failures", func() bool { return p.sweeps() >= listed+3 })
	sub.Close()
	<-watched

	if payload := lost.Load(); payload != nil {
		t.Fatalf("a transient sweep failure made the instance LOST: %s", payload)
	}
	if s := state(); s != "RUNNING" {
		t.Fatalf("after transient sweep failures the instance is %s", s)
	}
	// Transient failures are not refusals: each is logged as it happens
	// (a reset on a reused connection the client may retry unseen).
	if n := logs.about(account, slog.LevelWarn); n < 7 {
		t.Errorf("%d of the 7 failed answers logged", n)
	}
}
