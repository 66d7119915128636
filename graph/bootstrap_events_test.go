package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket/wsjson"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/sqlc"
)

// bootstrapEventView is a ProviderBootstrapEvent as the tests read it.
type bootstrapEventView struct {
	Type              string
	Version           int
	Snapshot          bool
	ProviderBootstrap struct {
		ID, Name, State, StateReason string
		Host                         *struct{ Name string }
	}
}

// subscribeBootstraps starts a providerBootstrapEvents subscription
// (includeCurrent) as token and returns a function that reads its next
// message: its payload and type.
func (e *env) subscribeBootstraps(t *testing.T, token string) func() (json.RawMessage, string) {
	t.Helper()
	conn, ctx := e.dialWS(t, "Bearer "+token)
	var msg struct {
		Type    string
		Payload json.RawMessage
	}
	if err := wsjson.Read(ctx, conn, &msg); err != nil || msg.Type != "connection_ack" {
		t.Fatalf("init: %+v, %v", msg, err)
	}
	wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { providerBootstrapEvents(includeCurrent: true) { type version snapshot
			providerBootstrap { id name state stateReason host { name } } } }`}})
	return func() (json.RawMessage, string) {
		t.Helper()
		if err := wsjson.Read(ctx, conn, &msg); err != nil {
			t.Fatalf("read: %v", err)
		}
		return msg.Payload, msg.Type
	}
}

// relay publishes the outbox's events, oldest first, as the reconciler's
// relay does, each until the hub (subscribed to Redis asynchronously) took
// it: a repeat is deduped by version.
func (e *env) relay(t *testing.T, rdb *redis.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	rows, err := e.db.Query(ctx, `WITH d AS (DELETE FROM outbox WHERE channel IS NOT NULL RETURNING id, channel, payload)
		SELECT channel, payload FROM d ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		channel string
		payload []byte
	}
	collected, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.channel, &x.payload)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range collected {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := rdb.Publish(ctx, prefix+r.channel, r.payload).Result()
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("nothing subscribed to %s", r.channel)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestProviderBootstrapEvents: a member cannot subscribe to provider
// bootstrap events (FORBIDDEN); an operator gets every bootstrap as it is
// now, then each one's changes in order as the control plane, the
// reconciler and the gateway record them, in the transaction of each
// change: CREATED → PROVISIONING → JOINED with its host, FAILED with why,
// UPDATED when only the reason of a retry changes.
func TestProviderBootstrapEvents(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	hub := live.New(live.Config{Redis: rdb, Prefix: prefix})
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Live = hub })
	// The hub takes what the relay publishes, as serve's does.
	hubCtx, stop := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); hub.Run(hubCtx) }()
	t.Cleanup(func() { stop(); <-hubDone })
	w := e.world("alpha")
	acct := e.id(e.operator, createAccount, map[string]any{"in": map[string]any{"name": "rent", "provider": "HETZNER", "credentials": "token"}},
		"createProviderAccount", "providerAccount", "id")
	pool := e.pool("rented", "vps-host", nil)
	create := func(name string) string {
		return e.id(e.operator, `mutation($in: CreateProviderBootstrapInput!) { createProviderBootstrap(input: $in) { providerBootstrap { id } } }`,
			map[string]any{"in": map[string]any{"providerAccountId": acct, "poolId": pool, "serverType": "cx22", "image": "debian-12", "name": name}},
			"createProviderBootstrap", "providerBootstrap", "id")
	}
	// change takes a bootstrap a step, as the one that takes it does: in
	// one transaction with its event.
	change := func(bootstrap string, step func(q *sqlc.Queries, id uuid.UUID) (events.Type, sqlc.ProviderBootstrap, error)) {
		t.Helper()
		id := decode(t, ids.ProviderBootstrap, bootstrap)
		err := pgx.BeginFunc(context.Background(), e.db, func(tx pgx.Tx) error {
			q := sqlc.New(tx)
			typ, b, err := step(q, id)
			if err != nil {
				return err
			}
			return events.RecordBootstrap(context.Background(), q, typ, b)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	old := create("rented-old")

	t.Run("a member is refused", func(t *testing.T) {
		payload, typ := e.subscribeBootstraps(t, w.member)()
		if !strings.Contains(string(payload), `"code":"FORBIDDEN"`) || strings.Contains(string(payload), "rented-old") {
			t.Fatalf("%s: %s", typ, payload)
		}
	})

	t.Run("an operator sees the current state, then each change in order", func(t *testing.T) {
		next := e.subscribeBootstraps(t, e.operator)
		read := func() string {
			t.Helper()
			payload, typ := next()
			var data struct {
				Data struct{ ProviderBootstrapEvents bootstrapEventView }
			}
			decodeInto(t, payload, &data)
			ev := data.Data.ProviderBootstrapEvents
			if typ != "next" || ev.ProviderBootstrap.ID == "" {
				t.Fatalf("%s: %s", typ, payload)
			}
			s := fmt.Sprintf("%s %s/%s v%d", ev.ProviderBootstrap.Name, ev.Type, ev.ProviderBootstrap.State, ev.Version)
			if ev.Snapshot {
				s += " snapshot"
			}
			if ev.ProviderBootstrap.StateReason != "" {
				s += " (" + ev.ProviderBootstrap.StateReason + ")"
			}
			if ev.ProviderBootstrap.Host != nil {
				s += " host " + ev.ProviderBootstrap.Host.Name
			}
			return s
		}
		if got := read(); got != "rented-old CREATED/PENDING v1 snapshot" {
			t.Fatalf("current state: %s", got)
		}

		fresh := create("rented-new")
		change(fresh, func(q *sqlc.Queries, id uuid.UUID) (events.Type, sqlc.ProviderBootstrap, error) {
			server, deadline := "4711", time.Now().Add(time.Hour)
			b, err := q.ProvisionBootstrap(ctx, sqlc.ProvisionBootstrapParams{ID: id, ServerID: &server, TokenHash: []byte("hash"), TokenExpiresAt: &deadline, Deadline: &deadline})
			return events.Provisioning, b, err
		})
		change(old, func(q *sqlc.Queries, id uuid.UUID) (events.Type, sqlc.ProviderBootstrap, error) {
			reason := "the provider is out of cx22"
			b, err := q.NoteBootstrapRetry(ctx, sqlc.NoteBootstrapRetryParams{ID: id, Reason: &reason})
			return events.Updated, b, err
		})
		change(fresh, func(q *sqlc.Queries, id uuid.UUID) (events.Type, sqlc.ProviderBootstrap, error) {
			b, err := q.GetProviderBootstrap(ctx, id)
			if err != nil {
				return "", b, err
			}
			host, err := q.CreateHost(ctx, sqlc.CreateHostParams{ID: ids.New(), PoolID: b.PoolID, Name: b.Name})
			if err != nil {
				return "", b, err
			}
			b, err = q.JoinBootstrap(ctx, sqlc.JoinBootstrapParams{ID: id, HostID: &host.ID})
			return events.Joined, b, err
		})
		change(old, func(q *sqlc.Queries, id uuid.UUID) (events.Type, sqlc.ProviderBootstrap, error) {
			reason := "no machine could be created within 15m0s"
			b, err := q.FailBootstrap(ctx, sqlc.FailBootstrapParams{ID: id, Reason: &reason})
			return events.Failed, b, err
		})
		e.relay(t, rdb, prefix)

		want := []string{
			"rented-new CREATED/PENDING v1",
			"rented-new PROVISIONING/PROVISIONING v2",
			"rented-old UPDATED/PENDING v2 (the provider is out of cx22)",
			"rented-new JOINED/JOINED v3 host rented-new",
			"rented-old FAILED/FAILED v3 (no machine could be created within 15m0s)",
		}
		for _, w := range want {
			if got := read(); got != w {
				t.Fatalf("got %s, want %s", got, w)
			}
		}
	})
}
