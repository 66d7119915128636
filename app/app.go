// Package app wires the processes of the better-compute binary from their
// configuration: connections, the domain service and the HTTP server.
//
// Each subcommand has one configuration struct (Config for serve,
// ReconcilerConfig, HostConfig, DevConfig, MigrateConfig, TokenConfig,
// ResealConfig). Its Env method is the table of the environment variables
// it reads, each bound to a field, which conf.Read reads and --help lists;
// its Flags method defines its flags. Defaults are named constants, kept
// beside the package Config they default, and applied in one applyDefaults
// per struct.
package app

import (
	"github.com/better-compute/vps/internal/pguuid"

	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/doctor"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/migrations"
	"github.com/better-compute/vps/ratelimit"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/server"
)

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
	cfg.AfterConnect = pguuid.AfterConnect
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

	// HostAddr is the address the host TLS listener listens on; empty
	// when there is none.
	HostAddr string
	// HostURL is the URL its join commands name (BC_HOST_URL or its
	// default); empty when there is no host listener.
	HostURL string

	db    *pgxpool.Pool
	redis *redis.Client
	http  *http.Server
	// hosts serves the host TLS listener; nil when there is none.
	hosts  *http.Server
	done   chan error
	cancel context.CancelFunc
}

// Start checks the schema, ensures the bootstrap token and starts serving.
// It refuses a schema that is behind this binary.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.applyDefaults()
	if cfg.Secret == "" {
		return nil, errors.New("BC_SECRET is not set: it derives the keys that seal user data")
	}
	sealer, err := newSealer(cfg.Secret, cfg.PreviousSecrets)
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
	s := &Server{db: db, redis: rdb, done: make(chan error, 2)}
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
	doc := doctor.New(doctor.Config{DB: s.db, Redis: s.redis, Prefix: cfg.RedisPrefix, Runtimes: cfg.Runtimes,
		HostSilentAfter: cfg.HostSilentAfter, KeyID: sealer.KeyID(), CertifiedMargin: cfg.CertifiedMargin})
	ca := hostca.New(hostca.Config{DB: s.db, Sealer: sealer, Validity: cfg.HostCertValidity, Logger: cfg.Logger})
	hostURL := ""
	if cfg.HostListen != "" {
		hostURL = cfg.HostURL
	}
	s.Service = control.New(s.db, control.Config{Sealer: sealer, Logger: cfg.Logger, HostSilentAfter: cfg.HostSilentAfter,
		Providers: cfg.Providers, ProviderSettings: ProviderSettings(cfg.ProviderEndpoints), Runtimes: cfg.Runtimes, Doctor: doc,
		HostCA: ca, HostURL: hostURL, JoinTokenTTL: cfg.JoinTokenTTL})
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
	stats := control.NewStatsRecorder(s.db, control.StatsConfig{Interval: cfg.SandboxStatsInterval, Keep: cfg.SandboxStatsKeep, Logger: cfg.Logger})
	gw := gateway.New(gateway.Config{
		DB: s.db, Redis: s.redis, Prefix: cfg.RedisPrefix, Sealer: sealer, HostSilentAfter: cfg.HostSilentAfter, Logger: cfg.Logger,
		Stats: statsSink{stats}, Authority: ca, HostURL: hostURL,
	})
	var hostLn net.Listener
	if cfg.HostListen != "" {
		// The CA is made or read now, so a broken one stops serve at start.
		if err := ca.Refresh(ctx); err != nil {
			ln.Close()
			return err
		}
		if hostLn, err = tls.Listen("tcp", cfg.HostListen, ca.ServerTLS(cfg.HostTLSNames)); err != nil {
			ln.Close()
			return fmt.Errorf("listen for hosts on %s: %w", cfg.HostListen, err)
		}
		s.HostAddr, s.HostURL = hostLn.Addr().String(), hostURL
	}
	hub := live.New(live.Config{Redis: s.redis, Prefix: cfg.RedisPrefix, Buffer: cfg.LiveBuffer, Logger: cfg.Logger})
	limiter := ratelimit.New(ratelimit.Config{Redis: s.redis, Prefix: cfg.RedisPrefix, Rates: cfg.RateLimits, Logger: cfg.Logger})
	handler := server.New(server.Config{
		DB: s.db, Redis: s.redis, Service: s.Service, Hosts: gw.Handler(), Live: hub, MaxConnections: cfg.MaxConnections, MaxUnread: cfg.LiveMaxUnread, Logger: cfg.Logger, AllowedOrigins: cfg.AllowedOrigins,
		RateLimit: limiter,
		Profiles:  cfg.Profiles,
		GraphQL:   cfg.GraphQL,
		Metrics:   gw.Collectors(),
	})
	var bg context.Context
	bg, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go gw.Run(bg)
	go stats.Run(bg)
	go hub.Run(bg)
	go handler.Run(bg)
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	go func() { s.done <- s.http.Serve(ln) }()
	if hostLn != nil {
		s.hosts = &http.Server{
			Handler:           server.WithRequestID(gw.Handler()),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		}
		go func() { s.done <- s.hosts.Serve(hostLn) }()
	}
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
	if s.hosts != nil {
		if serr := s.hosts.Shutdown(shutdownCtx); serr != nil && err == nil {
			err = serr
		}
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
