package reconciler

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/internal/testenv"
)

// TestStreamReclaimAndDeadLetter: an entry left unacknowledged by a dead
// consumer is reclaimed by another; one delivered too often is moved to the
// dead-letter stream and acknowledged.
func TestStreamReclaimAndDeadLetter(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	t.Cleanup(func() { rdb.Del(ctx, prefix+"work", prefix+"work:dead") })
	cfg := Config{Redis: rdb, Prefix: prefix, ClaimIdle: 10 * time.Millisecond, MaxDeliveries: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.applyDefaults()
	dead, alive := cfg, cfg
	dead.Consumer, alive.Consumer = "dead", "alive"
	a, b := newStream(dead), newStream(alive)
	if err := a.ensureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.ensureGroup(ctx); err != nil {
		t.Fatalf("ensureGroup twice: %v", err)
	}
	if err := a.add(ctx, "vps.instances", "k1"); err != nil {
		t.Fatal(err)
	}
	got, err := a.readGroup(ctx, ">", 0)
	if err != nil || len(got) != 1 || got[0].key != "k1" {
		t.Fatalf("read = %v, %v", got, err)
	}

	idlePastClaim := func() bool {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: prefix + "work", Group: group, Start: "-", End: "+", Count: 10}).Result()
		return err == nil && len(p) == 1 && p[0].Idle > cfg.ClaimIdle
	}
	testenv.Eventually(t, 5*time.Second, "the entry idle past ClaimIdle", idlePastClaim)
	claimed, err := b.claim(ctx)
	if err != nil || len(claimed) != 1 || claimed[0].id != got[0].id {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	testenv.Eventually(t, 5*time.Second, "the entry idle past ClaimIdle again", idlePastClaim)
	if claimed, err = b.claim(ctx); err != nil || len(claimed) != 0 {
		// The third delivery exceeds MaxDeliveries: dead-lettered, not handed out.
		t.Fatalf("third delivery handed out: %v, %v", claimed, err)
	}
	if n, _ := rdb.XLen(ctx, prefix+"work:dead").Result(); n != 1 {
		t.Fatalf("dead-letter stream holds %d, want 1", n)
	}
	if p, _ := rdb.XPending(ctx, prefix+"work", group).Result(); p.Count != 0 {
		t.Fatalf("%d entries still pending", p.Count)
	}
}

// TestStreamIsTrimmed: adding keeps the stream near its bound (MAXLEN ~
// trims whole macro nodes, so a little above it).
func TestStreamIsTrimmed(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	t.Cleanup(func() { rdb.Del(ctx, prefix+"work") })
	cfg := Config{Redis: rdb, Prefix: prefix, StreamMaxLen: 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.applyDefaults()
	s := newStream(cfg)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "k"
	}
	if err := s.add(ctx, "vps.instances", keys...); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.XLen(ctx, prefix+"work").Result(); n > 200 {
		t.Fatalf("stream holds %d entries after 1,000 adds with MAXLEN ~10", n)
	}
}
