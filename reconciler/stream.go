package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// group is the consumer group every reconciler reads the work stream in.
const group = "reconcilers"

// stream is the Redis work stream: entries name an instance to look at.
type stream struct {
	rdb           redis.UniversalClient
	key, dead     string
	consumer      string
	claimIdle     time.Duration
	maxDeliveries int64
	maxLen        int64
	log           *slog.Logger
}

func newStream(cfg Config) *stream {
	return &stream{
		rdb:           cfg.Redis,
		key:           cfg.Prefix + "work",
		dead:          cfg.Prefix + "work:dead",
		consumer:      cfg.Consumer,
		claimIdle:     cfg.ClaimIdle,
		maxDeliveries: cfg.MaxDeliveries,
		maxLen:        cfg.StreamMaxLen,
		log:           cfg.Logger,
	}
}

// ensureGroup creates the stream and its group if they are missing, as
// after a Redis that lost its data.
func (s *stream) ensureGroup(ctx context.Context) error {
	err := s.rdb.XGroupCreateMkStream(ctx, s.key, group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create consumer group: %w", err)
	}
	return nil
}

// add appends entries for keys, trimming the stream. A trimmed entry that
// was still pending is not lost work: the rescan finds its instance again.
func (s *stream) add(ctx context.Context, topic string, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.XAdd(ctx, &redis.XAddArgs{Stream: s.key, MaxLen: s.maxLen, Approx: true, Values: []string{"topic", topic, "key", k}})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add to work stream: %w", err)
	}
	return nil
}

// ack acknowledges entries whose work is committed.
func (s *stream) ack(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.rdb.XAck(ctx, s.key, group, ids...).Err()
}

// entry is one work stream entry.
type entry struct {
	id, topic, key string
}

func entries(msgs []redis.XMessage) []entry {
	out := make([]entry, 0, len(msgs))
	for _, m := range msgs {
		topic, _ := m.Values["topic"].(string)
		key, _ := m.Values["key"].(string)
		out = append(out, entry{id: m.ID, topic: topic, key: key})
	}
	return out
}

// readGroup reads entries for this consumer: start "0" re-reads its own
// pending entries (after a restart), ">" new ones.
func (s *stream) readGroup(ctx context.Context, start string, block time.Duration) ([]entry, error) {
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: s.consumer, Streams: []string{s.key, start}, Count: 256, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		if strings.HasPrefix(err.Error(), "NOGROUP") {
			// Redis lost the stream: make it again.
			return nil, s.ensureGroup(ctx)
		}
		return nil, fmt.Errorf("read work stream: %w", err)
	}
	var out []entry
	for _, st := range res {
		out = append(out, entries(st.Messages)...)
	}
	return out, nil
}

// claim takes over entries idle too long on other (dead) consumers.
// Entries delivered too often are moved to the dead-letter stream instead.
func (s *stream) claim(ctx context.Context) ([]entry, error) {
	msgs, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.key, Group: group, Consumer: s.consumer, MinIdle: s.claimIdle, Start: "0", Count: 256,
	}).Result()
	if err != nil {
		if strings.HasPrefix(err.Error(), "NOGROUP") {
			return nil, s.ensureGroup(ctx)
		}
		return nil, fmt.Errorf("claim idle entries: %w", err)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	pending, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: s.key, Group: group, Start: msgs[0].ID, End: msgs[len(msgs)-1].ID, Count: int64(len(msgs)) * 2, Consumer: s.consumer,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("read delivery counts: %w", err)
	}
	deliveries := make(map[string]int64, len(pending))
	for _, p := range pending {
		deliveries[p.ID] = p.RetryCount
	}
	var keep []entry
	for _, e := range entries(msgs) {
		if deliveries[e.id] <= s.maxDeliveries {
			keep = append(keep, e)
			continue
		}
		s.log.ErrorContext(ctx, "dead-lettering a work entry delivered too often", "entry", e.id, "topic", e.topic, "key", keyID(e.topic, e.key), "deliveries", deliveries[e.id])
		if err := s.deadLetter(ctx, e); err != nil {
			return keep, err
		}
	}
	return keep, nil
}

// deadLetter moves e to the dead-letter stream and acknowledges it.
func (s *stream) deadLetter(ctx context.Context, e entry) error {
	err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.dead, MaxLen: s.maxLen, Approx: true,
		Values: []string{"topic", e.topic, "key", e.key, "entry", e.id}}).Err()
	if err == nil {
		err = s.ack(ctx, []string{e.id})
	}
	if err != nil {
		return fmt.Errorf("dead-letter %s: %w", e.id, err)
	}
	return nil
}
