package reconciler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// commandEnv is a database with a hosted pool to add hosts to, and Redis.
type commandEnv struct {
	t      *testing.T
	db     *pgxpool.Pool
	rdb    *redis.Client
	prefix string
	hosts  func(name string, protocol *int16) uuid.UUID
}

func setupCommands(t *testing.T) *commandEnv {
	t.Helper()
	db := testenv.DB(t)
	rdb, prefix := testenv.Redis(t)
	svc := control.New(db, control.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	pool, err := svc.CreatePool(ctx, control.PoolInput{Name: "fra1", Class: vps.ClassHosted})
	if err != nil {
		t.Fatal(err)
	}
	e := &commandEnv{t: t, db: db, rdb: rdb, prefix: prefix}
	e.hosts = func(name string, protocol *int16) uuid.UUID {
		t.Helper()
		h, err := svc.CreateHost(ctx, pool.ID, name)
		if err != nil {
			t.Fatal(err)
		}
		e.exec("UPDATE hosts SET protocol = $2 WHERE id = $1", h.Host.ID, protocol)
		return h.Host.ID
	}
	return e
}

func (e *commandEnv) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *commandEnv) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM "+query, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *commandEnv) generation(host uuid.UUID) int64 {
	e.t.Helper()
	var gen int64
	if err := e.db.QueryRow(context.Background(), "SELECT spec_generation FROM hosts WHERE id = $1", host).Scan(&gen); err != nil {
		e.t.Fatal(err)
	}
	return gen
}

// queue queues a purge command for host in its own transaction.
func (e *commandEnv) queue(host uuid.UUID, timeout time.Duration) (sqlc.HostCommand, []uuid.UUID, error) {
	var row sqlc.HostCommand
	var wake []uuid.UUID
	err := pgx.BeginFunc(context.Background(), e.db, func(tx pgx.Tx) error {
		var err error
		row, err = queueCommand(context.Background(), sqlc.New(tx), command{host: host, kind: hostproto.KindSnapshotPurge,
			lane: hostproto.LaneInteractive, payload: hostproto.PurgePayload{SnapshotID: "snp_x"}, timeout: timeout}, &wake)
		return err
	})
	return row, wake, err
}

// TestQueueCommand: a command is queued for a host speaking version 3,
// bumping its spec generation and naming it to wake; a host speaking an
// older version (or none yet) is refused with a reason naming it, and
// nothing is written.
func TestQueueCommand(t *testing.T) {
	t.Parallel()
	e := setupCommands(t)
	v := func(n int16) *int16 { return &n }

	t.Run("a host speaking 3", func(t *testing.T) {
		host := e.hosts("hv-new", v(hostproto.CommandsVersion))
		gen := e.generation(host)
		row, wake, err := e.queue(host, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if row.State != "QUEUED" || row.HostID != host || time.Until(row.Deadline) < 59*time.Minute || e.generation(host) != gen+1 || len(wake) != 1 || wake[0] != host {
			t.Fatalf("row %+v, generation %d (was %d), wake %v", row, e.generation(host), gen, wake)
		}
	})
	for _, c := range []struct {
		name     string
		protocol *int16
		says     string
	}{
		{"a host speaking 2", v(hostproto.SandboxVersion), "host hv-2 speaks host protocol 2"},
		{"a host that never said", nil, "host hv-none speaks host protocol 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			host := e.hosts(strings.Fields(c.says)[1], c.protocol)
			gen := e.generation(host)
			_, wake, err := e.queue(host, time.Hour)
			var old *hostTooOldError
			if !errors.As(err, &old) || !strings.HasPrefix(err.Error(), c.says) || !strings.Contains(err.Error(), "need 3") {
				t.Fatalf("err = %v, want a hostTooOldError saying %q", err, c.says)
			}
			if n := e.count("host_commands WHERE host_id = $1", host); n != 0 || e.generation(host) != gen || len(wake) != 0 {
				t.Fatalf("refused, yet %d commands, generation %d (was %d), wake %v", n, e.generation(host), gen, wake)
			}
		})
	}
}

// TestOverdueCommandsTwoReconcilers: two reconcilers failing overdue
// commands at once fail each once — FAILED, abandoned, one outbox row, one
// generation bump each — and wake its host; a command whose deadline is
// ahead, or that already ended, is left alone.
func TestOverdueCommandsTwoReconcilers(t *testing.T) {
	t.Parallel()
	e := setupCommands(t)
	v3 := int16(hostproto.CommandsVersion)
	host := e.hosts("hv-1", &v3)
	const overdue = 50
	for range overdue {
		if _, _, err := e.queue(host, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	e.exec("UPDATE host_commands SET deadline = now() - interval '1 second'")
	ahead, _, err := e.queue(host, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	done, _, err := e.queue(host, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.exec("UPDATE host_commands SET state = 'SUCCEEDED', finished_at = now(), acknowledged_at = now(), deadline = now() - interval '1 second' WHERE id = $1", done.ID)
	gen := e.generation(host)

	sub := e.rdb.Subscribe(context.Background(), e.prefix+events.HostChannel(host))
	defer sub.Close()
	if _, err := sub.Receive(context.Background()); err != nil { // subscribed
		t.Fatal(err)
	}
	cfg := Config{DB: e.db, Redis: e.rdb, Prefix: e.prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	start := make(chan struct{})
	for i := range errs {
		r := New(cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = r.failOverdueCommands(context.Background())
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	if n := e.count("host_commands WHERE state = 'FAILED' AND error = 'deadline passed' AND abandoned_at IS NOT NULL AND finished_at IS NOT NULL AND acknowledged_at IS NULL"); n != overdue {
		t.Errorf("%d commands failed at their deadline, want %d", n, overdue)
	}
	if n := e.count("outbox WHERE topic = $1", vps.TopicCommands); n != overdue {
		t.Errorf("%d outbox rows, want one for each of the %d", n, overdue)
	}
	if n := e.count("(SELECT key FROM outbox WHERE topic = $1 GROUP BY key HAVING count(*) > 1) twice", vps.TopicCommands); n != 0 {
		t.Errorf("%d commands handed over twice", n)
	}
	if got := e.generation(host); got != gen+overdue {
		t.Errorf("generation %d, want %d (one bump each)", got, gen+overdue)
	}
	if n := e.count("host_commands WHERE id = ANY($1) AND state IN ('QUEUED', 'SUCCEEDED') AND abandoned_at IS NULL", []uuid.UUID{ahead.ID, done.ID}); n != 2 {
		t.Errorf("the command ahead of its deadline or the ended one was touched")
	}
	select {
	case <-sub.Channel():
	case <-time.After(5 * time.Second):
		t.Error("the host was not woken")
	}
}
