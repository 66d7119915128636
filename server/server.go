// Package server is the HTTP face of `serve`: GraphQL over HTTP and
// websocket, health and readiness, and Prometheus metrics.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/migrations"
	"github.com/better-compute/vps/ratelimit"
	"github.com/better-compute/vps/web"
)

// Config configures the HTTP handler.
type Config struct {
	// DB is the database. Required.
	DB *pgxpool.Pool
	// Redis carries work and events; readiness checks it. Required.
	Redis redis.UniversalClient
	// Service carries out API operations. Required.
	Service *control.Service
	// Logger logs requests that fail inside. Default: slog.Default().
	Logger *slog.Logger
	// Hosts serves the host gateway under /host/. Optional.
	Hosts http.Handler
	// Profiles serves Go's profiles under /debug/pprof/ (HandleProfiles).
	// Default false.
	Profiles bool
	// Live fans out instance events to subscriptions. Optional: without it
	// subscriptions are refused.
	Live *live.Hub
	// MaxConnections is how many websockets one principal may hold.
	// Default graph.DefaultMaxConnections.
	MaxConnections int
	// MaxUnread is how many bytes a websocket client may leave unread
	// before it is closed as a slow consumer. Default graph.DefaultMaxUnread.
	MaxUnread int
	// AllowedOrigins are the browser origins that may open websockets besides
	// the server's own host. Default: none.
	AllowedOrigins []string
	// RateLimit bounds each principal's operations. Optional: without it
	// nothing is limited.
	RateLimit *ratelimit.Limiter
	// GraphQL bounds the work one GraphQL request may cause. Zero fields
	// take graph's defaults.
	GraphQL graph.Limits
	// Metrics are more collectors for /metrics, such as the host
	// gateway's. Optional.
	Metrics []prometheus.Collector
}

// Server serves /graphql, /usage.csv, /host/, /healthz, /readyz, /metrics and, at /,
// the console.
type Server struct {
	http.Handler
	graph *graph.Handler
}

// Run does the server's background work until ctx ends.
func (s *Server) Run(ctx context.Context) { s.graph.Run(ctx) }

// New returns the Server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	reg := NewRegistry()
	m := newMetrics(reg)
	if cfg.Live != nil {
		reg.MustRegister(cfg.Live.Collectors()...)
	}
	if cfg.RateLimit != nil {
		reg.MustRegister(cfg.RateLimit.Collectors()...)
	}
	reg.MustRegister(newSandboxCollector(cfg.Service, cfg.Logger))
	reg.MustRegister(cfg.Metrics...)

	mux := http.NewServeMux()
	gh := graph.NewHandler(graph.HandlerConfig{
		Service:        cfg.Service,
		DB:             cfg.DB,
		Logger:         cfg.Logger,
		AllowedOrigins: cfg.AllowedOrigins,
		Observe:        m.observe,
		Live:           cfg.Live,
		MaxConnections: cfg.MaxConnections,
		MaxUnread:      cfg.MaxUnread,
		RateLimit:      cfg.RateLimit,
		Limits:         cfg.GraphQL,
	})
	mux.Handle("/graphql", withExplorer(gh, web.Explorer()))
	mux.Handle("GET "+graph.UsageCSVPath, gh)
	if cfg.Hosts != nil {
		mux.Handle("/host/", cfg.Hosts)
	}
	HandleOps(mux, reg, func(ctx context.Context) error { return Ready(ctx, cfg.DB, cfg.Redis) }, cfg.Logger)
	if cfg.Profiles {
		HandleProfiles(mux)
	}
	// The console: static files, and index.html for any other path.
	mux.Handle("/", web.Handler())
	return &Server{Handler: WithRequestID(mux), graph: gh}
}

// withExplorer answers a browser's visit to /graphql (a GET that accepts
// HTML and carries no operation) with the API explorer, and every other
// request with api.
func withExplorer(api, explorer http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.RawQuery == "" && r.Header.Get("Upgrade") == "" &&
			strings.Contains(r.Header.Get("Accept"), "text/html") {
			explorer.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// Ready checks what serving and reconciling need: the database at this
// binary's schema, and Redis.
func Ready(ctx context.Context, db *pgxpool.Pool, rdb redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := db.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := migrations.Current(ctx, db); err != nil {
		return err
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// WithRequestID gives every request an id, taken from X-Request-Id when the
// client sent a sane one, and echoes it back.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			b := make([]byte, 12)
			rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(audit.WithRequestID(r.Context(), id)))
	})
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}
