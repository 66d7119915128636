// Package ratelimit bounds how fast each principal may call the API: a
// token bucket per principal and class of operation, kept in Redis so that
// every serve replica takes from the same one. Refill and take are one Lua
// script, so concurrent callers never take more than the bucket holds.
//
// The limiter fails open: while Redis cannot be reached, operations go
// through unchecked (counted, and logged once per outage), so the API
// stays up without Redis; after a failure it asks Redis again only a
// second later, so operations do not each wait on it meanwhile.
package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/vps"
)

// Class is a kind of operation with a bucket of its own.
type Class string

// The classes: subscription starts count as queries.
const (
	Query    Class = "query"
	Mutation Class = "mutation"
)

// Config configures a Limiter.
type Config struct {
	// Redis holds the buckets. Required.
	Redis redis.Scripter
	// Prefix starts every key, as on every process of the deployment.
	// Default vps.DefaultRedisPrefix.
	Prefix string
	// Rates are the buckets of each role and class. Unset rates take
	// their defaults (Rates.WithDefaults).
	Rates Rates
	// Timeout is how long one check may wait on Redis before the
	// operation is let through unchecked. Default DefaultTimeout.
	Timeout time.Duration
	// Now tells the time buckets refill by. Default time.Now.
	Now func() time.Time
	// Logger logs outages of Redis. Default slog.Default().
	Logger *slog.Logger
}

// DefaultTimeout is the default Config.Timeout: far above a Redis round
// trip, short enough that a Redis that hangs does not stall the API.
const DefaultTimeout = 250 * time.Millisecond

func (c *Config) applyDefaults() {
	if c.Prefix == "" {
		c.Prefix = vps.DefaultRedisPrefix
	}
	c.Rates = c.Rates.WithDefaults()
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Limiter decides whether a principal's operation may run.
type Limiter struct {
	cfg     Config
	metrics *metrics
	// failing is set while Redis fails, so an outage is logged once.
	failing atomic.Bool
	// retryAt is when, in Unix nanoseconds of Config.Now, Redis is asked
	// again after it failed: until then operations pass without waiting
	// on it.
	retryAt atomic.Int64
}

// retryRedis is how long after Redis failed operations pass unchecked
// before it is asked again.
const retryRedis = time.Second

// New returns a Limiter. It panics on a rate that is neither off nor
// positive in both rate and burst, which only code can build.
func New(cfg Config) *Limiter {
	cfg.applyDefaults()
	for _, r := range []Rate{cfg.Rates.MemberQueries, cfg.Rates.MemberMutations, cfg.Rates.OperatorQueries, cfg.Rates.OperatorMutations} {
		if !r.Off && (r.PerSecond <= 0 || r.Burst < 1) {
			panic(fmt.Sprintf("ratelimit: rate %+v is neither off nor positive", r))
		}
	}
	return &Limiter{cfg: cfg, metrics: newMetrics()}
}

// Collectors are the limiter's Prometheus metrics.
func (l *Limiter) Collectors() []prometheus.Collector { return l.metrics.collectors() }

// Allow takes one operation of class from p's bucket. When the bucket is
// empty it returns false and how long until it holds one again. When Redis
// fails it returns true.
func (l *Limiter) Allow(ctx context.Context, p *iam.Principal, class Class) (ok bool, retryAfter time.Duration) {
	r := l.rate(p.Role, class)
	if r.Off {
		return true, 0
	}
	now := l.cfg.Now()
	if now.UnixNano() < l.retryAt.Load() {
		l.metrics.errors.Inc()
		return true, 0
	}
	checkCtx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	key := l.cfg.Prefix + "ratelimit:" + string(class) + ":" + p.ID.String()
	ok, wait, err := take(checkCtx, l.cfg.Redis, key, r, 1, now)
	if err != nil && ctx.Err() != nil {
		return true, 0 // the caller gave up; Redis did not fail
	}
	if err != nil {
		l.metrics.errors.Inc()
		l.retryAt.Store(now.Add(retryRedis).UnixNano())
		if l.failing.CompareAndSwap(false, true) {
			l.cfg.Logger.WarnContext(ctx, "rate limits are not enforced until Redis answers again", "err", err)
		}
		return true, 0
	}
	if l.failing.CompareAndSwap(true, false) {
		l.cfg.Logger.InfoContext(ctx, "rate limits are enforced again: Redis answers")
	}
	if !ok {
		l.metrics.limited.WithLabelValues(string(p.Role), string(class)).Inc()
	}
	return ok, wait
}

// rate is the bucket of role and class; roles other than operator are
// members.
func (l *Limiter) rate(role iam.Role, class Class) Rate {
	rs := l.cfg.Rates
	switch {
	case role == iam.Operator && class == Mutation:
		return rs.OperatorMutations
	case role == iam.Operator:
		return rs.OperatorQueries
	case class == Mutation:
		return rs.MemberMutations
	default:
		return rs.MemberQueries
	}
}
