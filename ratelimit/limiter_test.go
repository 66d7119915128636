package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
)

// small are rates tests can exhaust: each role and class its own burst.
var small = Rates{
	MemberQueries:     Rate{PerSecond: 1, Burst: 3},
	MemberMutations:   Rate{PerSecond: 1, Burst: 2},
	OperatorQueries:   Rate{PerSecond: 1, Burst: 5},
	OperatorMutations: Rate{PerSecond: 1, Burst: 4},
}

type limiterEnv struct {
	t     *testing.T
	l     *Limiter
	clock *testenv.Clock
	logs  *lockedBuffer
	// down makes every Redis command fail while set; redisCalls counts
	// those that failed.
	down       *atomic.Bool
	redisCalls *atomic.Int64
}

// setup returns a Limiter with the small rates on a Redis client that can
// be made to fail, a clock of its own and a log to read.
func setup(t *testing.T) *limiterEnv {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	opts := *rdb.Options()
	down, calls := &atomic.Bool{}, &atomic.Int64{}
	opts.Limiter = outage{down, calls}
	client := redis.NewClient(&opts)
	t.Cleanup(func() { client.Close() })
	e := &limiterEnv{t: t, clock: testenv.NewClock(), logs: &lockedBuffer{}, down: down, redisCalls: calls}
	e.l = New(Config{Redis: client, Prefix: prefix, Rates: small, Now: e.clock.Now, Timeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(e.logs, nil))})
	return e
}

// outage is a go-redis Limiter that fails every command while down.
type outage struct {
	down    *atomic.Bool
	refused *atomic.Int64
}

func (o outage) Allow() error {
	if o.down.Load() {
		o.refused.Add(1)
		return errors.New("injected outage")
	}
	return nil
}

func (outage) ReportResult(error) {}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func (e *limiterEnv) metric(name string, labels map[string]string) float64 {
	e.t.Helper()
	return testenv.Metric(e.t, e.l.Collectors(), name, labels)
}

func principal(role iam.Role) *iam.Principal {
	return &iam.Principal{ID: uuid.New(), Role: role}
}

// allowed counts how many of n operations l lets through.
func (e *limiterEnv) allowed(t *testing.T, p *iam.Principal, class Class, n int) int {
	t.Helper()
	got := 0
	for range n {
		if ok, _ := e.l.Allow(context.Background(), p, class); ok {
			got++
		}
	}
	return got
}

// TestLimiterBuckets: each principal has a bucket per class, sized by its
// role; emptying one leaves the others alone, and refusals are counted by
// role and class.
func TestLimiterBuckets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		role  iam.Role
		class Class
		burst int
	}{
		{iam.Member, Query, 3},
		{iam.Member, Mutation, 2},
		{iam.Operator, Query, 5},
		{iam.Operator, Mutation, 4},
	} {
		t.Run(string(c.role)+" "+string(c.class), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			p := principal(c.role)
			if got := e.allowed(t, p, c.class, c.burst+3); got != c.burst {
				t.Fatalf("allowed %d of %d; want the burst, %d", got, c.burst+3, c.burst)
			}
			if refused := e.metric("bc_rate_limited_total", map[string]string{"role": string(c.role), "class": string(c.class)}); refused != 3 {
				t.Fatalf("bc_rate_limited_total = %v; want 3", refused)
			}
			other := map[Class]Class{Query: Mutation, Mutation: Query}[c.class]
			if got := e.allowed(t, p, other, 1); got != 1 {
				t.Fatalf("the %s bucket is empty too", other)
			}
			if got := e.allowed(t, principal(c.role), c.class, 1); got != 1 {
				t.Fatal("another principal's bucket is empty too")
			}
		})
	}
}

// TestLimiterRefills: an empty bucket says when it will hold a token, and
// does at that time.
func TestLimiterRefills(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := principal(iam.Member)
	e.allowed(t, p, Mutation, 2)
	ok, retry := e.l.Allow(context.Background(), p, Mutation)
	if ok || retry != time.Second {
		t.Fatalf("on an empty bucket at 1/s: %v, retry after %v; want refused, 1s", ok, retry)
	}
	e.clock.Advance(retry - time.Millisecond)
	if e.allowed(t, p, Mutation, 1) != 0 {
		t.Fatal("allowed before the time it said")
	}
	e.clock.Advance(time.Millisecond)
	if e.allowed(t, p, Mutation, 2) != 1 {
		t.Fatal("not one allowed at the time it said")
	}
}

// TestLimiterFailsOpen: while Redis fails, every operation goes through,
// each is counted, and the outage is logged once; Redis is asked again a
// second after it failed, and then the limits hold again; a second outage
// is logged again.
func TestLimiterFailsOpen(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := principal(iam.Member)
	e.allowed(t, p, Mutation, 2)

	e.down.Store(true)
	if got := e.allowed(t, p, Mutation, 10); got != 10 {
		t.Fatalf("with Redis down: allowed %d of 10; want all", got)
	}
	if n := e.metric("bc_rate_limit_errors_total", nil); n != 10 {
		t.Fatalf("bc_rate_limit_errors_total = %v; want 10", n)
	}
	if n := e.redisCalls.Load(); n != 1 {
		t.Fatalf("Redis asked %d times in the outage; want once, then not for a second", n)
	}
	if n := e.logs.count("not enforced"); n != 1 {
		t.Fatalf("outage logged %d times; want once:\n%s", n, e.logs.b.String())
	}

	e.down.Store(false)
	if got := e.allowed(t, p, Mutation, 3); got != 3 {
		t.Fatalf("with Redis back, before it is asked again: allowed %d of 3", got)
	}
	e.clock.Advance(retryRedis) // and the bucket of 2 at 1/s holds 1 again
	if got := e.allowed(t, p, Mutation, 2); got != 1 {
		t.Fatalf("with Redis back and asked again: allowed %d of 2; want 1", got)
	}
	if n := e.logs.count("enforced again"); n != 1 {
		t.Fatalf("recovery logged %d times; want once", n)
	}
	e.down.Store(true)
	e.clock.Advance(retryRedis)
	e.allowed(t, p, Mutation, 3)
	if n := e.logs.count("not enforced"); n != 2 {
		t.Fatalf("two outages logged %d times; want twice", n)
	}
}

// TestLimiterOff: a rate that is off checks nothing, not even Redis.
func TestLimiterOff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.l.cfg.Rates.MemberQueries = Rate{Off: true}
	e.down.Store(true)
	if got := e.allowed(t, principal(iam.Member), Query, 100); got != 100 {
		t.Fatalf("allowed %d of 100", got)
	}
	if n := e.metric("bc_rate_limit_errors_total", nil); n != 0 {
		t.Fatalf("bc_rate_limit_errors_total = %v; want 0: Redis was asked", n)
	}
}

// BenchmarkAllow is what the limiter adds to each operation: one script
// call to Redis.
func BenchmarkAllow(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	l := New(Config{Redis: rdb, Prefix: prefix, Rates: Rates{MemberQueries: Rate{PerSecond: 1e9, Burst: 1e9}}})
	p := principal(iam.Member)
	for b.Loop() {
		if ok, _ := l.Allow(context.Background(), p, Query); !ok {
			b.Fatal("refused")
		}
	}
}
