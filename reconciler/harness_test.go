package reconciler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"crypto/ed25519"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/seal"
)

// env is a database, a Redis prefix and an operator context with one
// tenant, a hosted pool, a flavor and an image.
type env struct {
	t      *testing.T
	ctx    context.Context
	db     *pgxpool.Pool
	rdb    *redis.Client
	prefix string
	svc    *control.Service
	log    *slog.Logger

	tenant, pool, flavor, image uuid.UUID
	// started counts the reconcilers started, to name each.
	started int
}

func setup(t *testing.T) *env {
	t.Helper()
	db := testenv.DB(t)
	rdb, prefix := testenv.Redis(t)
	sealer, _ := seal.New("test")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &env{
		t: t, db: db, rdb: rdb, prefix: prefix, log: log,
		ctx: iam.WithPrincipal(context.Background(), control.System),
		svc: control.New(db, control.Config{Sealer: sealer, Logger: log}),
	}
	tenant, err := e.svc.CreateTenant(e.ctx, "acme")
	e.check(err)
	pool, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: "fra1", Class: vps.ClassHosted})
	e.check(err)
	flavor, err := e.svc.CreateFlavor(e.ctx, control.FlavorInput{Name: "one", Vcpus: 1, MemoryMB: 1024, DiskGB: 10})
	e.check(err)
	img, err := e.svc.RegisterImage(e.ctx, control.ImageInput{Name: "debian", SourceURL: "file:///images/debian.raw",
		SHA256: strings.Repeat("a", 64), Format: "raw", Visibility: "public", Verified: true})
	e.check(err)
	e.tenant, e.pool, e.flavor, e.image = tenant.ID, pool.ID, flavor.ID, img.ID
	e.ranged(pool.ID)
	return e
}

// ranged gives a hosted pool an IP range, without which nothing is placed
// in it.
func (e *env) ranged(pool uuid.UUID) {
	e.t.Helper()
	_, err := e.svc.CreateIPPool(e.ctx, control.IPPoolInput{PoolID: pool, CIDR: "10.200.0.0/22", Gateway: "10.200.0.1", RangeStart: "10.200.0.10", RangeEnd: "10.200.3.250"})
	e.check(err)
}

func (e *env) check(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// reconcilers starts n reconcilers, stopped when the test ends.
func (e *env) reconcilers(n int, tune func(*reconciler.Config)) {
	for range n {
		e.start(tune, nil)
	}
}

// run starts one reconciler, with what register adds to it.
func (e *env) run(register func(*reconciler.Reconciler)) {
	e.start(nil, register)
}

// start starts one reconciler, stopped by stop or when the test ends.
func (e *env) start(tune func(*reconciler.Config), register func(*reconciler.Reconciler)) (r *reconciler.Reconciler, stop func()) {
	e.started++
	i := e.started
	cfg := reconciler.Config{
		DB: e.db, Redis: e.rdb, Prefix: e.prefix, Consumer: fmt.Sprintf("r%d", i),
		RescanInterval: 500 * time.Millisecond, ClaimIdle: time.Second, Logger: e.log,
	}
	if tune != nil {
		tune(&cfg)
	}
	r = reconciler.New(cfg)
	if register != nil {
		register(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("reconciler %d: %v", i, err)
		}
	})
	e.t.Cleanup(stop)
	return r, stop
}

// host adopts a host with capacity that counts as alive, speaking the
// current host protocol.
func (e *env) host(name string, vcpus int32) uuid.UUID {
	e.t.Helper()
	v := int16(hostproto.Version)
	return e.hostSpeaking(name, vcpus, &v)
}

// hostSpeaking adopts a host with capacity that counts as alive and has
// said it speaks protocol (nil: it never said).
func (e *env) hostSpeaking(name string, vcpus int32, protocol *int16) uuid.UUID {
	e.t.Helper()
	h, err := e.svc.CreateHost(e.ctx, e.pool, name)
	e.check(err)
	_, err = e.svc.SetHostCapacity(e.ctx, control.HostCapacityInput{HostID: h.Host.ID, Vcpus: vcpus, MemoryMB: int64(vcpus) * 4096, DiskGB: 1000})
	e.check(err)
	_, err = e.db.Exec(context.Background(), "UPDATE hosts SET last_seen_at = now(), protocol = $2 WHERE id = $1", h.Host.ID, protocol)
	e.check(err)
	return h.Host.ID
}

// finish ends a command as the gateway does on its host's report (or its
// deadline): its final state and, with wake, the outbox row on
// vps.commands in the same transaction.
func (e *env) finish(cmd uuid.UUID, state, result, errText string, abandoned, wake bool) {
	e.t.Helper()
	tx, err := e.db.Begin(context.Background())
	e.check(err)
	defer tx.Rollback(context.Background())
	var res any
	if result != "" {
		res = result
	}
	_, err = tx.Exec(context.Background(), `UPDATE host_commands SET state = $2, result = $3::jsonb, error = $4, finished_at = now(),
		abandoned_at = CASE WHEN $5 THEN now() END WHERE id = $1`, cmd, state, res, errText, abandoned)
	e.check(err)
	if wake {
		_, err = tx.Exec(context.Background(), "INSERT INTO outbox (topic, key) VALUES ($1, $2)", vps.TopicCommands, cmd)
		e.check(err)
	}
	e.check(tx.Commit(context.Background()))
}

var key = func() string {
	pub, _, _ := ed25519.GenerateKey(nil)
	k, _ := ssh.NewPublicKey(pub)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}()

func (e *env) create(name string) uuid.UUID {
	e.t.Helper()
	inst, err := e.svc.CreateInstance(e.ctx, control.CreateInstanceInput{
		TenantID: e.tenant, PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image, Name: name, SSHKeys: []string{key},
	})
	e.check(err)
	return inst.ID
}

// eventually waits until cond holds, re-checking on every published
// instance event (and at least every 100 ms), or fails after timeout.
func (e *env) eventually(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	sub := e.rdb.PSubscribe(context.Background(), e.prefix+"events:*")
	defer sub.Close()
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-sub.Channel():
		case <-tick.C:
		case <-deadline:
			e.t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	e.check(e.db.QueryRow(context.Background(), "SELECT count(*) FROM "+query, args...).Scan(&n))
	return n
}

// poolWith makes another hosted pool with a placement policy and makes it
// the one e.host and e.create use.
func (e *env) poolWith(name, placement string, singleTenant bool) {
	e.t.Helper()
	p, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: name, Class: vps.ClassHosted, Placement: placement, SingleTenant: singleTenant})
	e.check(err)
	e.ranged(p.ID)
	e.pool = p.ID
}

// createFor creates an instance of another tenant and flavor.
func (e *env) createFor(tenant, flavor uuid.UUID, name string) uuid.UUID {
	e.t.Helper()
	inst, err := e.svc.CreateInstance(e.ctx, control.CreateInstanceInput{
		TenantID: tenant, PoolID: e.pool, FlavorID: flavor, ImageID: e.image, Name: name, SSHKeys: []string{key},
	})
	e.check(err)
	return inst.ID
}

// perHost counts live allocations by host name.
func (e *env) perHost() map[string]int {
	e.t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT h.name, count(a.id) FROM hosts h
		LEFT JOIN allocations a ON a.host_id = h.id AND a.released_at IS NULL WHERE h.pool_id = $1 GROUP BY h.name`, e.pool)
	e.check(err)
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		rows.Scan(&name, &n)
		out[name] = n
	}
	return out
}

// periodicRan waits for the periodic job name to run twice more, so one
// whole run began after the call.
func (e *env) periodicRan(name string) {
	e.t.Helper()
	var since time.Time
	e.check(e.db.QueryRow(context.Background(), "SELECT now()").Scan(&since))
	for range 2 {
		e.eventually(10*time.Second, "a run of "+name, func() bool {
			var at time.Time
			err := e.db.QueryRow(context.Background(), "SELECT ran_at FROM periodic_runs WHERE name = $1", name).Scan(&at)
			return err == nil && at.After(since)
		})
		e.check(e.db.QueryRow(context.Background(), "SELECT now()").Scan(&since))
	}
}
