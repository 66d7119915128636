package ratelimit

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed bucket.lua
var bucketLua string

// bucketScript refills and takes from a bucket atomically; Run sends it by
// EVALSHA, loading it only when Redis does not have it yet.
var bucketScript = redis.NewScript(bucketLua)

// take takes cost tokens from the bucket at key if it holds them at now,
// and otherwise says how long until it will.
func take(ctx context.Context, rdb redis.Scripter, key string, r Rate, cost int, now time.Time) (ok bool, wait time.Duration, err error) {
	res, err := bucketScript.Run(ctx, rdb, []string{key},
		now.UnixMicro(), r.PerSecond, r.Burst, cost, r.ttl().Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("take from bucket %s: %w", key, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("take from bucket %s: the script answered %v", key, res)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Microsecond, nil
}
