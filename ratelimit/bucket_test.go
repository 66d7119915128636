package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/internal/testenv"
)

// TestBucketNeverOverGrants: many takers at once, on one bucket and a
// clock that stands still, get exactly what it holds.
func TestBucketNeverOverGrants(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	const burst, takers, each = 100, 32, 20
	r := Rate{PerSecond: 1, Burst: burst}
	now := time.Now()
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	for range takers {
		wg.Go(func() {
			for range each {
				ok, _, err := take(context.Background(), rdb, prefix+"b", r, 1, now)
				switch {
				case err != nil:
					t.Error(err)
					return
				case ok:
					granted.Add(1)
				default:
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if granted.Load() != burst || refused.Load() != takers*each-burst {
		t.Fatalf("granted %d and refused %d of %d; want %d granted", granted.Load(), refused.Load(), takers*each, burst)
	}
}

// TestBucketRefills: an empty bucket says how long until it holds a token,
// holds it after that time, never holds more than its burst, does not
// refill when a clock runs behind, and expires once it would be full; on
// the Redis of deployments and on dev's in-process one.
func TestBucketRefills(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := testenv.Redis(t)
		testRefills(t, rdb, prefix)
	})
	t.Run("dev", func(t *testing.T) {
		t.Parallel()
		url, stop, err := devenv.Redis()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { rdb.Close() })
		testRefills(t, rdb, "dev:")
	})
}

func testRefills(t *testing.T, rdb *redis.Client, prefix string) {
	ctx := context.Background()
	r := Rate{PerSecond: 4, Burst: 2}
	key := prefix + "b"
	clock := testenv.NewClock()
	takeN := func(n int) (granted int, wait time.Duration) {
		t.Helper()
		for range n {
			ok, w, err := take(ctx, rdb, key, r, 1, clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				granted++
			} else {
				wait = w
			}
		}
		return granted, wait
	}

	if got, wait := takeN(3); got != 2 || wait != 250*time.Millisecond {
		t.Fatalf("a full bucket of 2 at 4/s: granted %d of 3, wait %v; want 2, 250ms", got, wait)
	}
	clock.Advance(100 * time.Millisecond)
	if got, wait := takeN(1); got != 0 || wait != 150*time.Millisecond {
		t.Fatalf("100ms later: granted %d, wait %v; want 0, 150ms", got, wait)
	}
	clock.Advance(150 * time.Millisecond)
	if got, _ := takeN(2); got != 1 {
		t.Fatalf("250ms after emptying: granted %d of 2; want 1", got)
	}
	clock.Advance(time.Hour)
	if got, _ := takeN(3); got != 2 {
		t.Fatalf("an hour later: granted %d of 3; want the burst, 2", got)
	}
	clock.Advance(-time.Minute) // another server's clock, behind
	if got, _ := takeN(1); got != 0 {
		t.Fatalf("with a clock behind: granted %d; want 0", got)
	}
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > r.ttl() {
		t.Fatalf("TTL of the bucket = %v, %v; want at most %v", ttl, err, r.ttl())
	}
}
