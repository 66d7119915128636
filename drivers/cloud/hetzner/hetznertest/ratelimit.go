package hetznertest

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// bucket is the project's rate limit: size tokens, refilled continuously at
// refill tokens a second; each request takes one.
type bucket struct {
	size, refill, tokens float64
	last                 time.Time
}

func newBucket(size int, refill float64, now time.Time) bucket {
	return bucket{size: float64(size), refill: refill, tokens: float64(size), last: now}
}

func (b *bucket) fill(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.size, b.tokens+now.Sub(b.last).Seconds()*b.refill)
		b.last = now
	}
}

// take takes a token; when none is left it returns false and how long until
// one is back.
func (b *bucket) take(now time.Time) (bool, time.Duration) {
	b.fill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.refill * float64(time.Second))
}

// setHeaders states the bucket in the RateLimit-* headers: Reset is the unix
// second when the bucket is full again.
func (b *bucket) setHeaders(h http.Header, now time.Time) {
	b.fill(now)
	full := now.Add(time.Duration((b.size - b.tokens) / b.refill * float64(time.Second)))
	reset := full.Unix()
	if full.Nanosecond() > 0 {
		reset++
	}
	h.Set("RateLimit-Limit", strconv.Itoa(int(b.size)))
	h.Set("RateLimit-Remaining", strconv.Itoa(int(math.Floor(b.tokens))))
	h.Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
}

// ceilSeconds rounds d up to whole seconds, at least one.
func ceilSeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}
