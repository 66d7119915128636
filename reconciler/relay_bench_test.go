package reconciler_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/reconciler"
)

// BenchmarkRelay times each hop of one change's event, one change at a
// time, with one reconciler relaying: from the writing statement's
// clock_timestamp() (as an instance's updatedAt is stamped) to the
// writer's commit returning, to a listener of the outbox channel being
// notified, to a Redis subscriber receiving the event. The writer commits
// with synchronous_commit on (as the API does) or off, which shows the
// commit's WAL flush.
func BenchmarkRelay(b *testing.B) {
	for _, sync := range []string{"on", "off"} {
		b.Run("synchronous_commit="+sync, func(b *testing.B) { benchRelay(b, sync) })
	}
}

func benchRelay(b *testing.B, sync string) {
	ctx := context.Background()
	db := testenv.DB(b)
	rdb, prefix := testenv.Redis(b)
	const channel = "events:bench"
	sub := rdb.Subscribe(ctx, prefix+channel)
	b.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		b.Fatal(err)
	}
	listener, err := pgx.ConnectConfig(ctx, db.Config().ConnConfig)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { listener.Close(ctx) })
	if _, err := listener.Exec(ctx, "LISTEN outbox"); err != nil {
		b.Fatal(err)
	}
	writer, err := pgx.ConnectConfig(ctx, db.Config().ConnConfig)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { writer.Close(ctx) })
	if _, err := writer.Exec(ctx, "SET synchronous_commit = "+sync); err != nil {
		b.Fatal(err)
	}

	r := reconciler.New(reconciler.Config{DB: db, Redis: rdb, Prefix: prefix, Consumer: "bench",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	b.Cleanup(func() { cancel(); <-done })

	var commit, notified, published []time.Duration
	msgs := sub.Channel()
	change := func(i int) {
		key := uuid.New()
		var stamp time.Time
		tx, err := writer.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		err = tx.QueryRow(ctx, `INSERT INTO outbox (topic, key, channel, payload)
			VALUES ($1, $2::uuid, $3, jsonb_build_object('key', $2::uuid::text, 'version', $4::int, 'at', clock_timestamp()))
			RETURNING (payload->>'at')::timestamptz`, reconciler.TopicEvents, key, channel, i).Scan(&stamp)
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		if _, err := listener.WaitForNotification(ctx); err != nil {
			b.Fatal(err)
		}
		heard := time.Now()
		for msg := range msgs {
			var ev struct {
				Key string `json:"key"`
			}
			json.Unmarshal([]byte(msg.Payload), &ev)
			if ev.Key == key.String() {
				break
			}
		}
		got := time.Now()
		commit = append(commit, committed.Sub(stamp))
		notified = append(notified, heard.Sub(stamp))
		published = append(published, got.Sub(stamp))
	}
	for i := range 20 { // warm up: connections, plans
		change(i)
	}
	commit, notified, published = nil, nil, nil
	b.ResetTimer()
	for i := range b.N {
		change(i)
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"commit", commit}, {"notified", notified}, {"published", published}} {
		slices.Sort(m.ds)
		b.ReportMetric(ms(m.ds[len(m.ds)/2]), m.name+"-p50-ms")
		b.ReportMetric(ms(m.ds[(len(m.ds)*99)/100]), m.name+"-p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
