package graph_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket/wsjson"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/ratelimit"
)

// limited is an endpoint whose members may make burst mutations and burst
// queries, refilled at one a second by a clock the test moves; operators,
// who set the world up, are not limited.
type limited struct {
	*env
	clock *testenv.Clock
	// replica starts another endpoint sharing the buckets, as another
	// serve on the same Redis.
	replica func() string

	mu       sync.Mutex
	limiters []*ratelimit.Limiter
}

func setupLimited(t *testing.T, burst int) *limited {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	l := &limited{clock: testenv.NewClock()}
	rate := ratelimit.Rate{PerSecond: 1, Burst: burst}
	tune := func(c *graph.HandlerConfig) {
		lim := ratelimit.New(ratelimit.Config{Redis: rdb, Prefix: prefix, Now: l.clock.Now, Logger: c.Logger, Timeout: testTimeout,
			Rates: ratelimit.Rates{MemberQueries: rate, MemberMutations: rate, OperatorQueries: ratelimit.Rate{Off: true}, OperatorMutations: ratelimit.Rate{Off: true}}})
		l.mu.Lock()
		l.limiters = append(l.limiters, lim)
		l.mu.Unlock()
		c.RateLimit = lim
		c.Live = live.New(live.Config{Redis: rdb, Prefix: prefix})
	}
	l.env = setupWith(t, tune)
	l.replica = func() string { return l.serve(tune) }
	return l
}

// testTimeout is how long the limiter waits on Redis in tests: long, so a
// busy machine does not make it fail open.
const testTimeout = 10 * time.Second

// metric sums a counter over every endpoint's limiter.
func (l *limited) metric(name string, labels map[string]string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum float64
	for _, lim := range l.limiters {
		sum += testenv.Metric(l.t, lim.Collectors(), name, labels)
	}
	return sum
}

// wantLimited checks that an answer is a refusal by the rate limit, with
// data null and a retry after retry seconds, over HTTP and in the error.
func wantLimited(t *testing.T, resp *http.Response, r response, retry int) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != strconv.Itoa(retry) {
		t.Errorf("HTTP %d, Retry-After %q; want 429, %d", resp.StatusCode, resp.Header.Get("Retry-After"), retry)
	}
	if r.code() != "RATE_LIMITED" || r.Errors[0].Extensions.RetryAfter != retry || len(r.Data) > 0 && string(r.Data) != "null" {
		t.Errorf("answer %+v (data %s); want RATE_LIMITED with retryAfter %d and no data", r.Errors, r.Data, retry)
	}
}

// TestRateLimitMutations: a member past its mutation bucket is refused
// with RATE_LIMITED, 429 and Retry-After, and the refused mutation does
// nothing: no instance, no audit row, whether it would have succeeded or
// failed; so failing creates write audit rows no faster than the rate.
// Its queries, and another member, are not held back.
func TestRateLimitMutations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		input   func(w world, name string) map[string]any
		outcome string
	}{
		{"creates that succeed", func(w world, name string) map[string]any { return w.input(name) }, "success"},
		{"creates that fail", func(w world, name string) map[string]any {
			in := w.input(name)
			in["flavorId"] = "flv_" + strings.Repeat("1", 26)
			return in
		}, "failure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const burst = 3
			l := setupLimited(t, burst)
			w, other := l.world("alpha"), l.world("beta")
			for i := range burst + 5 {
				resp, r := l.post(l.url, w.member, createInstance, map[string]any{"in": c.input(w, "vm-"+strconv.Itoa(i))})
				if i < burst {
					if r.code() == "RATE_LIMITED" || resp.StatusCode != http.StatusOK {
						t.Fatalf("create %d of a burst of %d: HTTP %d %+v", i+1, burst, resp.StatusCode, r.Errors)
					}
					continue
				}
				wantLimited(t, resp, r, 1)
			}
			if n := l.count("instances", "name LIKE 'vm-%'"); c.outcome == "success" && n != burst || c.outcome == "failure" && n != 0 {
				t.Errorf("%d instances written", n)
			}
			if n := l.count("audit_events", "action = 'instance.create' AND outcome = $1", c.outcome); n != burst {
				t.Errorf("%d audit rows of creates; want %d, one per create let through", n, burst)
			}
			if n := l.count("audit_events", "action = 'instance.create' AND error_code = 'RATE_LIMITED'"); n != 0 {
				t.Errorf("%d audit rows of refused creates", n)
			}
			if n := l.metric("bc_rate_limited_total", map[string]string{"role": "member", "class": "mutation"}); n != 5 {
				t.Errorf("bc_rate_limited_total{member,mutation} = %v; want 5", n)
			}
			if r := l.do(w.member, `{ viewer { principal { name } } }`, nil); r.code() != "" {
				t.Errorf("a query with the mutation bucket empty: %+v", r.Errors)
			}
			if r := l.do(other.member, createInstance, map[string]any{"in": other.input("b")}); r.code() != "" {
				t.Errorf("another member's create: %+v", r.Errors)
			}
		})
	}
}

// TestRateLimitSharedByReplicas: two serve replicas on one Redis take
// from one bucket per principal.
func TestRateLimitSharedByReplicas(t *testing.T) {
	t.Parallel()
	const burst = 4
	l := setupLimited(t, burst)
	urls := []string{l.url, l.replica()}
	w := l.world("alpha")
	allowed := 0
	for i := range 2 * burst {
		resp, r := l.post(urls[i%2], w.member, `{ viewer { principal { name } } }`, nil)
		if r.code() == "" {
			allowed++
		} else {
			wantLimited(t, resp, r, 1)
		}
	}
	if allowed != burst {
		t.Fatalf("%d queries allowed across two replicas; want the burst, %d", allowed, burst)
	}
}

// TestRateLimitRefills: the bucket holds an operation again after the wait
// it gave, and not before.
func TestRateLimitRefills(t *testing.T) {
	t.Parallel()
	l := setupLimited(t, 1)
	w := l.world("alpha")
	const q = `{ viewer { principal { name } } }`
	if r := l.do(w.member, q, nil); r.code() != "" {
		t.Fatalf("first query: %+v", r.Errors)
	}
	resp, r := l.post(l.url, w.member, q, nil)
	wantLimited(t, resp, r, 1)
	l.clock.Advance(999 * time.Millisecond)
	if r := l.do(w.member, q, nil); r.code() != "RATE_LIMITED" {
		t.Fatalf("before the wait: %+v", r.Errors)
	}
	l.clock.Advance(time.Millisecond)
	if r := l.do(w.member, q, nil); r.code() != "" {
		t.Fatalf("after the wait: %+v", r.Errors)
	}
}

// TestRateLimitSubscriptions: starting a subscription on a websocket takes
// from the query bucket like a query does.
func TestRateLimitSubscriptions(t *testing.T) {
	t.Parallel()
	const burst = 2
	l := setupLimited(t, burst)
	w := l.world("alpha")
	conn, ctx := l.dialWS(t, "Bearer "+w.member)
	var msg struct {
		Type    string
		ID      string
		Payload json.RawMessage
	}
	if err := wsjson.Read(ctx, conn, &msg); err != nil || msg.Type != "connection_ack" {
		t.Fatalf("init: %+v %v", msg, err)
	}
	for i := range burst + 1 {
		wsjson.Write(ctx, conn, map[string]any{"id": strconv.Itoa(i), "type": "subscribe", "payload": map[string]any{"query": "subscription { instanceEvents { version } }"}})
	}
	// The first burst run on, sending nothing; the next is refused.
	var r response
	if err := wsjson.Read(ctx, conn, &msg); err != nil || json.Unmarshal(msg.Payload, &r) != nil ||
		msg.Type != "next" || r.code() != "RATE_LIMITED" || r.Errors[0].Extensions.RetryAfter != 1 {
		t.Fatalf("subscription %d of a burst of %d: %s %s %v", burst+1, burst, msg.Type, msg.Payload, err)
	}
	resp, r := l.post(l.url, w.member, `{ viewer { principal { name } } }`, nil)
	wantLimited(t, resp, r, 1)
	if n := l.metric("bc_rate_limited_total", map[string]string{"role": "member", "class": "query"}); n != 2 {
		t.Errorf("bc_rate_limited_total{member,query} = %v; want 2", n)
	}
}

// TestRateLimitRedisDown: with the limiter's Redis gone, the API answers
// as if unlimited, and counts each operation let through unchecked.
func TestRateLimitRedisDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close() // nothing listens there now
	dead := redis.NewClient(&redis.Options{Addr: gone, MaxRetries: -1})
	t.Cleanup(func() { dead.Close() })
	var lim *ratelimit.Limiter
	e := setupWith(t, func(c *graph.HandlerConfig) {
		lim = ratelimit.New(ratelimit.Config{Redis: dead, Logger: c.Logger,
			Rates: ratelimit.Rates{MemberMutations: ratelimit.Rate{PerSecond: 1, Burst: 1}, OperatorMutations: ratelimit.Rate{Off: true}, OperatorQueries: ratelimit.Rate{Off: true}}})
		c.RateLimit = lim
	})
	w := e.world("alpha")
	for i := range 5 {
		if r := e.do(w.member, createInstance, map[string]any{"in": w.input("vm-" + strconv.Itoa(i))}); r.code() != "" {
			t.Fatalf("create %d with Redis down: %+v", i, r.Errors)
		}
	}
	if n := testenv.Metric(t, lim.Collectors(), "bc_rate_limit_errors_total", nil); n != 5 {
		t.Fatalf("bc_rate_limit_errors_total = %v; want 5", n)
	}
}
