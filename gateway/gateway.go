// Package gateway is the host gateway in `serve`: hosts authenticate with
// their credential, long-poll their NodeSpec and post runtime reports. A
// report runs a chain of handlers, each in a savepoint of its own: the
// instance status handler records what a host saw and wakes the reconciler
// (it never changes an instance's state), and the Xid handler turns its
// GPUs' Xid events into device health.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/hostjoin"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

// Config configures the gateway.
type Config struct {
	// DB is the database. Required.
	DB *pgxpool.Pool
	// Redis wakes long-polls when a spec changes. Required.
	Redis redis.UniversalClient
	// Prefix starts every Redis channel. Default vps.DefaultRedisPrefix.
	Prefix string
	// Sealer opens user data for the host that runs the instance. Required.
	Sealer *seal.Sealer
	// HostSilentAfter is how long a host may go without reporting before it
	// counts as silent; a report after that wakes its instances. Default
	// vps.DefaultHostSilentAfter.
	HostSilentAfter time.Duration
	// HostURL is the https URL hosts reach the host listener at; the
	// NoCloud seeds of provider bootstraps name it. Empty: no seeds are
	// served.
	HostURL string
	// Authority checks the client certificates hosts present over TLS and
	// issues certificates at join and renewal. Nil: hosts authenticate by
	// their bearer credential only.
	Authority *hostca.Authority
	// Stats takes the domain stats of every accepted report. Nil: they are
	// dropped.
	Stats StatsSink
	// Logger logs. Default slog.Default().
	Logger *slog.Logger

	// failHandler names a report handler made to fail after it ran, its
	// writes made (tests only: export_test.go).
	failHandler string
}

func (c *Config) applyDefaults() {
	if c.Prefix == "" {
		c.Prefix = vps.DefaultRedisPrefix
	}
	if c.HostSilentAfter <= 0 {
		c.HostSilentAfter = vps.DefaultHostSilentAfter
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Gateway serves hosts.
type Gateway struct {
	cfg Config
	q   *sqlc.Queries
	hub *hub
	log *slog.Logger
	// stopping is closed when Run ends, releasing every long-poll.
	stopping chan struct{}
	// refused holds, by host ID, why its spec was last refused, so each
	// refusal is logged once, not on every retry.
	refused sync.Map
	// unknownCommands holds, by host ID, the commands not its own it last
	// reported, so each set is logged once.
	unknownCommands sync.Map
	// runtimeRefused holds, by host ID, why it was refused for its
	// runtime, so each refusal is logged once, not on every retry.
	runtimeRefused sync.Map
	// proofs holds, by host ID, how the host proved itself in its last
	// committed report whose certification was recorded (a certProof), so
	// a partial report with the same proof need not look at every
	// instance of the host again.
	proofs sync.Map
	// poolRuntimes holds, by pool ID, the runtime its hosts must run, read
	// once: a pool's runtime is set when it is created and never changes,
	// and every long-poll and report checks it (checkRuntime).
	poolRuntimes sync.Map
	// refusedTotal counts the hosts refused, by reason.
	refusedTotal *prometheus.CounterVec
	// chain are the report handlers (handlers), in order.
	chain []reportHandler
	// handlerFailures counts, by handler, the reports whose handler failed
	// and was rolled back.
	handlerFailures *prometheus.CounterVec
}

// New returns a Gateway. Run must run for long-polls to wake early.
func New(cfg Config) *Gateway {
	cfg.applyDefaults()
	g := &Gateway{cfg: cfg, q: sqlc.New(cfg.DB), hub: newHub(), log: cfg.Logger, stopping: make(chan struct{}), refusedTotal: newRefusedCounter(),
		handlerFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_gateway_report_handler_failures_total",
			Help: "Host reports whose handler failed, by handler: its writes were rolled back, the other handlers' kept, and the report accepted.",
		}, []string{"handler"})}
	g.chain = g.handlers()
	for i, h := range g.chain {
		if h.name == cfg.failHandler {
			g.chain[i].handle = failAfter(h.handle)
		}
	}
	return g
}

// Run holds the process's one Redis subscription for spec changes until
// ctx ends; then it releases every long-poll, so the server can shut down.
func (g *Gateway) Run(ctx context.Context) error {
	defer close(g.stopping)
	return g.hub.run(ctx, g.cfg.Redis, g.cfg.Prefix)
}

// Handler serves the protocol's paths, for every version from
// hostproto.MinVersion to hostproto.Version, so a rolling upgrade leaves
// older daemons serving their instances.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	for v := hostproto.MinVersion; v <= hostproto.Version; v++ {
		mux.HandleFunc("GET "+hostproto.SpecPathOf(v), g.authenticated(v, g.spec))
		mux.HandleFunc("POST "+hostproto.ReportPathOf(v), g.authenticated(v, g.report))
	}
	mux.HandleFunc("GET "+hostjoin.SeedPathPrefix+"{token}/{file}", g.seed)
	mux.HandleFunc("POST "+hostproto.JoinPath, g.join)
	mux.HandleFunc("POST "+hostproto.RenewPath, g.renew)
	mux.HandleFunc("/host/", unknownProtocol)
	return mux
}

// unknownProtocol answers a host daemon of a version the gateway does not
// serve (its paths name it, /host/v0/…, or a version newer than this
// build's) with 400 and what to do, which the daemon logs.
func unknownProtocol(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("this gateway speaks host protocol %d (%s): upgrade the host daemon", hostproto.Version, hostproto.PathPrefix(hostproto.Version)), http.StatusBadRequest)
}

// hostHandler serves an authenticated host speaking protocol version.
type hostHandler func(w http.ResponseWriter, r *http.Request, host authenticatedHost, version int)

// authenticatedHost is the host a request came from and how it proved it.
type authenticatedHost struct {
	sqlc.Host
	// CertNotAfter is when the client certificate the host presented
	// expires; nil when it proved itself with its bearer credential.
	CertNotAfter *time.Time
}

// authenticated checks that the request's header names the version of its
// path, finds the host by its client certificate or its credential
// (authenticate) and refuses it when it runs another runtime than its
// pool's.
func (g *Gateway) authenticated(version int, next hostHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get(hostproto.Header); v != strconv.Itoa(version) {
			http.Error(w, fmt.Sprintf("%s is host protocol %d, but header %s says %q", hostproto.PathPrefix(version), version, hostproto.Header, v), http.StatusBadRequest)
			return
		}
		auth, ref, err := g.authenticate(r)
		if err != nil {
			g.fail(w, r, "authenticate host", err)
			return
		}
		if ref != nil {
			g.refuse(w, r, ref)
			return
		}
		if err := g.checkRuntime(r.Context(), auth.Host, r.Header.Get(hostproto.RuntimeHeader)); err != nil {
			g.refuseRuntime(w, r, err)
			return
		}
		next(w, r, auth, version)
	}
}

func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	if r.Context().Err() != nil {
		return
	}
	// The response's X-Request-Id finds this line.
	g.log.ErrorContext(r.Context(), what, "request_id", audit.RequestID(r.Context()), "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}

// Waiting reports how many hosts' long-polls wait on this process for
// their NodeSpec to change.
func (g *Gateway) Waiting() int { return g.hub.waiting() }

// spec answers a long-poll: the NodeSpec, rendered for the version the
// host speaks, once its generation passes after, or 204 when the wait ends
// first. From hostproto.DeltaVersion, with after > 0, it is a delta to the
// spec of generation after, which the host holds. A host holding instances
// its version cannot honour is refused (400): it keeps running what it
// has, untouched.
func (g *Gateway) spec(w http.ResponseWriter, r *http.Request, auth authenticatedHost, version int) {
	host := auth.Host
	if err := g.noteProtocol(r.Context(), host, version); err != nil {
		g.fail(w, r, "record host protocol", err)
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	wait := hostproto.MaxWaitSeconds * time.Second
	if s, err := strconv.Atoi(r.URL.Query().Get("wait")); err == nil && s >= 0 && s < hostproto.MaxWaitSeconds {
		wait = time.Duration(s) * time.Second
	}
	woken := g.hub.subscribe(host.ID) // before reading, so no change slips between
	defer g.hub.unsubscribe(host.ID, woken)
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		gen, err := g.q.HostGeneration(r.Context(), host.ID)
		if err != nil {
			g.fail(w, r, "read host generation", err)
			return
		}
		if gen > after {
			spec, err := g.buildSpec(r.Context(), host, version, after)
			var behind *behindError
			switch {
			case errors.As(err, &behind):
				g.refuseSpec(r.Context(), host, behind)
				http.Error(w, behind.Error(), http.StatusBadRequest)
				return
			case err != nil:
				g.fail(w, r, "build spec", err)
				return
			}
			g.refused.Delete(host.ID)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(spec)
			return
		}
		select {
		case <-woken:
		case <-timeout.C:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-g.stopping:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			return
		}
	}
}
