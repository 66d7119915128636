// Package app wires the processes of the better-compute binary from their
// configuration: connections, the domain service and the HTTP server.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/migrations"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/server"
)

// Config is what the processes need, read from the environment.
type Config struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	DatabaseURL string
	// RedisURL is the Redis connection string (REDIS_URL).
	RedisURL string
	// Secrets derive the sealing keys (BC_SECRET, then the comma-separated
	// BC_SECRET_PREVIOUS kept to open values sealed before a rotation).
	Secrets []string
	// BootstrapToken, when set, is made an operator token at start
	// (BC_BOOTSTRAP_TOKEN).
	BootstrapToken string
	// AllowedOrigins may open websockets besides the server's own host
	// (BC_ALLOWED_ORIGINS, comma-separated).
	AllowedOrigins []string
	// RedisPrefix starts every Redis key and channel (BC_REDIS_PREFIX), so
	// deployments can share a Redis. Default "bc:".
	RedisPrefix string
	// HostSilentAfter is how long a host may go without reporting before its
	// instances are LOST (BC_HOST_SILENT_AFTER). Default 30s.
	HostSilentAfter time.Duration
	// LiveBuffer is how many events a subscriber may fall behind before it
	// is dropped (BC_LIVE_BUFFER). Default 256.
	LiveBuffer int
	// LiveMaxUnread is how many bytes a websocket client may leave unread
	// before it is closed as a slow consumer (BC_LIVE_MAX_UNREAD). Default 1 MiB.
	LiveMaxUnread int
	// Providers are the provider kinds accounts may use (BC_PROVIDERS,
	// comma-separated). Default: hetzner, proxmox.
	Providers []string
	// MaxConnections is how many websockets one principal may hold
	// (BC_WS_MAX_CONNECTIONS). Default 100.
	MaxConnections int
	// Listen is the HTTP address (--listen). Default 127.0.0.1:8080.
	Listen string
	// Logger is the process log. Default: JSON to stderr.
	Logger *slog.Logger
}

// FromEnv reads the Config from the environment.
func FromEnv() Config {
	cfg := Config{
		DatabaseURL:    os.Getenv("DATABASE_URL"),
		RedisURL:       os.Getenv("REDIS_URL"),
		BootstrapToken: os.Getenv("BC_BOOTSTRAP_TOKEN"),
		AllowedOrigins: split(os.Getenv("BC_ALLOWED_ORIGINS")),
		RedisPrefix:    os.Getenv("BC_REDIS_PREFIX"),
	}
	cfg.LiveBuffer, _ = strconv.Atoi(os.Getenv("BC_LIVE_BUFFER"))
	cfg.LiveMaxUnread, _ = strconv.Atoi(os.Getenv("BC_LIVE_MAX_UNREAD"))
	cfg.MaxConnections, _ = strconv.Atoi(os.Getenv("BC_WS_MAX_CONNECTIONS"))
	cfg.Providers = split(os.Getenv("BC_PROVIDERS"))
	if d, err := time.ParseDuration(os.Getenv("BC_HOST_SILENT_AFTER")); err == nil {
		cfg.HostSilentAfter = d
	}
	if s := os.Getenv("BC_SECRET"); s != "" {
		cfg.Secrets = append([]string{s}, split(os.Getenv("BC_SECRET_PREVIOUS"))...)
	}
	return cfg
}

func split(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// DefaultListen is the default HTTP address of serve and dev.
const DefaultListen = "127.0.0.1:8080"

func (c *Config) applyDefaults() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if c.RedisPrefix == "" {
		c.RedisPrefix = "bc:"
	}
	if c.HostSilentAfter <= 0 {
		c.HostSilentAfter = 30 * time.Second
	}
}

// OpenRedis connects to Redis.
func OpenRedis(ctx context.Context, url string) (*redis.Client, error) {
	if url == "" {
		return nil, errors.New("REDIS_URL is not set")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("connect to Redis: %w", err)
	}
	return rdb, nil
}

// OpenDB connects to Postgres.
func OpenDB(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("DATABASE_URL is not set")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	return pool, nil
}

// Server is a running `serve`.
type Server struct {
	// Addr is the address it listens on.
	Addr string
	// Service is its domain service.
	Service *control.Service

	db     *pgxpool.Pool
	redis  *redis.Client
	http   *http.Server
	done   chan error
	cancel context.CancelFunc
}

// Start checks the schema, ensures the bootstrap token and starts serving.
// It refuses a schema that is behind this binary.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.applyDefaults()
	if len(cfg.Secrets) == 0 {
		return nil, errors.New("BC_SECRET is not set: it derives the keys that seal user data")
	}
	sealer, err := seal.New(cfg.Secrets...)
	if err != nil {
		return nil, err
	}
	rdb, err := OpenRedis(ctx, cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	db, err := OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	s := &Server{db: db, redis: rdb, done: make(chan error, 1)}
	if err := s.start(ctx, cfg, sealer); err != nil {
		s.closeConns()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, cfg Config, sealer *seal.Sealer) error {
	if err := migrations.Current(ctx, s.db); err != nil {
		return err
	}
	s.Service = control.New(s.db, control.Config{Sealer: sealer, Logger: cfg.Logger, HostSilentAfter: cfg.HostSilentAfter,
		Providers: cfg.Providers, ProviderSettings: ProviderSettings()})
	if cfg.BootstrapToken != "" {
		if err := s.Service.EnsureBootstrapToken(ctx, cfg.BootstrapToken); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	s.Addr = ln.Addr().String()
	gw := gateway.New(gateway.Config{
		DB: s.db, Redis: s.redis, Prefix: cfg.RedisPrefix, Sealer: sealer, HostSilentAfter: cfg.HostSilentAfter, Logger: cfg.Logger,
	})
	hub := live.New(live.Config{Redis: s.redis, Prefix: cfg.RedisPrefix, Buffer: cfg.LiveBuffer, Logger: cfg.Logger})
	handler := server.New(server.Config{
		DB: s.db, Redis: s.redis, Service: s.Service, Hosts: gw.Handler(), Live: hub, MaxConnections: cfg.MaxConnections, MaxUnread: cfg.LiveMaxUnread, Logger: cfg.Logger, AllowedOrigins: cfg.AllowedOrigins,
	})
	var bg context.Context
	bg, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go gw.Run(bg)
	go hub.Run(bg)
	go handler.Run(bg)
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	go func() { s.done <- s.http.Serve(ln) }()
	return nil
}

// Wait blocks until ctx ends, then shuts the server down gracefully.
func (s *Server) Wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.done:
	}
	s.cancel() // releases the gateway's long-polls
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := s.http.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = serr
	}
	s.closeConns()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) closeConns() {
	if s.cancel != nil {
		s.cancel()
	}
	s.redis.Close()
	s.db.Close()
}
