package app

import (
	"context"
	"flag"
	"log/slog"
	"strings"
	"time"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/hostjoin"
	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/server"
)

// ReconcilerConfig is the configuration of `reconcile`.
type ReconcilerConfig struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	// Required.
	DatabaseURL string
	// RedisURL is the Redis connection string (REDIS_URL). Required.
	RedisURL string
	// Secret opens provider credentials and user data (BC_SECRET). Without
	// it, instances of provider pools wait. Default: none.
	Secret string
	// PreviousSecrets open values sealed before a rotation
	// (BC_SECRET_PREVIOUS, comma-separated). Default: none.
	PreviousSecrets []string
	// RedisPrefix starts every Redis key and channel (BC_REDIS_PREFIX).
	// Default vps.DefaultRedisPrefix.
	RedisPrefix string
	// HostSilentAfter is how long a host may go without reporting before its
	// instances are LOST (BC_HOST_SILENT_AFTER). Default
	// vps.DefaultHostSilentAfter.
	HostSilentAfter time.Duration
	// CertifiedMargin is how long a host's certificate must still be
	// valid for a pool requiring certified hosts to place on it
	// (BC_CERTIFIED_MARGIN). Default vps.DefaultCertifiedMargin.
	CertifiedMargin time.Duration
	// Workers is how many instances converge at once (--workers). Default
	// reconciler.DefaultWorkers.
	Workers int
	// RescanInterval is how often Postgres is scanned for instances not at
	// rest (--rescan-interval). Default reconciler.DefaultRescanInterval.
	RescanInterval time.Duration
	// ClaimIdle is how long a work entry may sit unacknowledged on a
	// consumer before another takes it (--claim-idle). Default
	// reconciler.DefaultClaimIdle.
	ClaimIdle time.Duration
	// SweepInterval is how often each provider account's servers are
	// listed, by all reconcilers together (--sweep-interval). Default
	// reconciler.DefaultSweepInterval.
	SweepInterval time.Duration
	// OrphanGrace is how long a server with our label and no live instance
	// lives before it is deleted (--orphan-grace). Default
	// reconciler.DefaultOrphanGrace.
	OrphanGrace time.Duration
	// SandboxInterval is how often sandboxes past their deadline are
	// expired, host commands past theirs failed, and every warm pool
	// looked at, by all reconcilers
	// together (BC_SANDBOX_INTERVAL). Default
	// reconciler.DefaultSandboxInterval.
	SandboxInterval time.Duration
	// SnapshotTimeout is how long a host has to take a sandbox snapshot
	// before it fails (BC_SNAPSHOT_TIMEOUT). Default
	// reconciler.DefaultSnapshotTimeout.
	SnapshotTimeout time.Duration
	// UsageInterval is the length of one metered usage interval
	// (BC_USAGE_INTERVAL). Default reconciler.DefaultUsageInterval.
	UsageInterval time.Duration
	// UsageSettle is how long after an interval ends it is metered
	// (BC_USAGE_SETTLE). Default reconciler.DefaultUsageSettle.
	UsageSettle time.Duration
	// HostURL is serve's host listener as provider bootstraps' machines
	// reach it (BC_HOST_URL, as on serve), their join script's BC_SERVER.
	// Default: none, and bootstraps wait.
	HostURL string
	// SeedURL is where Proxmox bootstraps' machines fetch their NoCloud
	// seed from serve (BC_BOOTSTRAP_SEED_URL). Default HostURL.
	SeedURL string
	// BootstrapTokenTTL is how long a bootstrap's join token can be used
	// (BC_BOOTSTRAP_TOKEN_TTL). Default reconciler.DefaultBootstrapTokenTTL.
	BootstrapTokenTTL time.Duration
	// BootstrapTimeout is how long a bootstrap's machine has to join
	// (BC_BOOTSTRAP_TIMEOUT). Default reconciler.DefaultBootstrapTimeout.
	BootstrapTimeout time.Duration
	// Drivers tune the provider drivers (--provider-poll,
	// --provider-timeout, --shutdown-timeout). Zero fields: the drivers'
	// own defaults. Their Endpoints are the operator's policy on where
	// accounts may send requests, as on serve (BC_PROVIDER_ENDPOINTS,
	// default DefaultProviderEndpoints(); BC_PROVIDER_ALLOW_PRIVATE,
	// default false).
	Drivers DriverOptions
	// MetricsListen is the HTTP address serving /metrics, /healthz and
	// /readyz (--metrics-listen). Default: none, as several reconcilers
	// may share a machine.
	MetricsListen string
	// Profiles serves the Go runtime's profiles at /debug/pprof/ on the
	// metrics listener (BC_PPROF). Default off.
	Profiles bool
	// LogLevel is the least level logged (--log-level, BC_LOG_LEVEL).
	// Default slog.LevelInfo.
	LogLevel slog.Level
	// Logger is the process log. Default: JSON to stderr.
	Logger *slog.Logger
}

// Reconciler returns the configuration of a reconciler working beside the
// server c configures: the same stores, secrets, Redis prefix, host silence
// and log, and defaults for the rest.
func (c Config) Reconciler() ReconcilerConfig {
	return ReconcilerConfig{
		DatabaseURL: c.DatabaseURL, RedisURL: c.RedisURL,
		Secret: c.Secret, PreviousSecrets: c.PreviousSecrets,
		RedisPrefix: c.RedisPrefix, HostSilentAfter: c.HostSilentAfter, CertifiedMargin: c.CertifiedMargin, Logger: c.Logger,
		Drivers: DriverOptions{Endpoints: c.ProviderEndpoints}, HostURL: c.HostURL,
	}
}

// Env returns the environment variables reconcile reads, bound to c's
// fields: the table both conf.Read and --help use.
func (c *ReconcilerConfig) Env() []conf.Var {
	return []conf.Var{
		required(databaseURL(&c.DatabaseURL)),
		required(redisURL(&c.RedisURL)),
		secret(&c.Secret),
		previousSecrets(&c.PreviousSecrets),
		redisPrefix(&c.RedisPrefix),
		hostSilentAfter(&c.HostSilentAfter),
		certifiedMargin(&c.CertifiedMargin),
		conf.Duration(&c.SandboxInterval, "BC_SANDBOX_INTERVAL", reconciler.DefaultSandboxInterval,
			"how often sandboxes past their deadline are expired, host commands past theirs failed, snapshots settled and warm pools kept, by all reconcilers together"),
		conf.Duration(&c.SnapshotTimeout, "BC_SNAPSHOT_TIMEOUT", reconciler.DefaultSnapshotTimeout,
			"how long a host has to take a sandbox snapshot before it fails"),
		usageInterval(&c.UsageInterval),
		usageSettle(&c.UsageSettle),
		hostURL(&c.HostURL, "https URL provider bootstraps' machines reach serve's host listener at (BC_HOST_URL of serve): their join script's BC_SERVER; empty: bootstraps wait"),
		conf.Func("BC_BOOTSTRAP_SEED_URL", "",
			"base URL Proxmox bootstraps' machines fetch their cloud-init NoCloud seed from serve at: plain http or a publicly trusted https, as cloud-init cannot pin the host CA; empty: BC_HOST_URL",
			func(s string) error {
				if err := hostjoin.CheckServer(s); err != nil {
					return err
				}
				c.SeedURL = strings.TrimRight(s, "/")
				return nil
			}),
		conf.Duration(&c.BootstrapTokenTTL, "BC_BOOTSTRAP_TOKEN_TTL", reconciler.DefaultBootstrapTokenTTL,
			"how long a provider bootstrap's one-time join token can be used"),
		conf.Duration(&c.BootstrapTimeout, "BC_BOOTSTRAP_TIMEOUT", reconciler.DefaultBootstrapTimeout,
			"how long a provider bootstrap's machine has to join before it is deleted and the bootstrap FAILED"),
		providerEndpoints(&c.Drivers.Endpoints.Hosts),
		providerAllowPrivate(&c.Drivers.Endpoints.AllowPrivate, false),
		profiles(&c.Profiles),
		logLevel(&c.LogLevel),
	}
}

// Flags defines reconcile's flags on fs, bound to c's fields.
func (c *ReconcilerConfig) Flags(fs *flag.FlagSet) {
	conf.IntFlag(fs, &c.Workers, "workers", reconciler.DefaultWorkers, "instances converged at once")
	conf.DurationFlag(fs, &c.RescanInterval, "rescan-interval", reconciler.DefaultRescanInterval,
		"how often Postgres is scanned for instances not at rest")
	conf.DurationFlag(fs, &c.ClaimIdle, "claim-idle", reconciler.DefaultClaimIdle,
		"how long an entry may sit unacknowledged on a consumer before another takes it")
	conf.DurationFlag(fs, &c.SweepInterval, "sweep-interval", reconciler.DefaultSweepInterval,
		"how often each provider account's servers are listed, by all reconcilers together")
	conf.DurationFlag(fs, &c.OrphanGrace, "orphan-grace", reconciler.DefaultOrphanGrace,
		"how long a server with our label and no live instance lives before it is deleted")
	fs.DurationVar(&c.Drivers.PollInterval, "provider-poll", 0,
		"how often provider actions and tasks are polled; 0: the driver's default")
	fs.DurationVar(&c.Drivers.Timeout, "provider-timeout", 0,
		"how long one request to a provider may take; 0: the driver's default")
	fs.DurationVar(&c.Drivers.ShutdownTimeout, "shutdown-timeout", 0,
		"how long a provider server may take to shut down before it is powered off; 0: the driver's default")
	metricsListenFlag(fs, &c.MetricsListen)
	logLevelFlag(fs, &c.LogLevel)
}

func (c *ReconcilerConfig) applyDefaults() {
	if c.RedisPrefix == "" {
		c.RedisPrefix = vps.DefaultRedisPrefix
	}
	if c.HostSilentAfter <= 0 {
		c.HostSilentAfter = vps.DefaultHostSilentAfter
	}
	if c.CertifiedMargin <= 0 {
		c.CertifiedMargin = vps.DefaultCertifiedMargin
	}
	if c.Workers <= 0 {
		c.Workers = reconciler.DefaultWorkers
	}
	if c.RescanInterval <= 0 {
		c.RescanInterval = reconciler.DefaultRescanInterval
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = reconciler.DefaultClaimIdle
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = reconciler.DefaultSweepInterval
	}
	if c.OrphanGrace <= 0 {
		c.OrphanGrace = reconciler.DefaultOrphanGrace
	}
	if c.SandboxInterval <= 0 {
		c.SandboxInterval = reconciler.DefaultSandboxInterval
	}
	if c.SnapshotTimeout <= 0 {
		c.SnapshotTimeout = reconciler.DefaultSnapshotTimeout
	}
	if c.BootstrapTokenTTL <= 0 {
		c.BootstrapTokenTTL = reconciler.DefaultBootstrapTokenTTL
	}
	if c.BootstrapTimeout <= 0 {
		c.BootstrapTimeout = reconciler.DefaultBootstrapTimeout
	}
	if c.UsageInterval <= 0 {
		c.UsageInterval = reconciler.DefaultUsageInterval
	}
	if c.UsageSettle <= 0 {
		c.UsageSettle = reconciler.DefaultUsageSettle
	}
	if c.Drivers.Endpoints.Hosts == nil {
		c.Drivers.Endpoints.Hosts = DefaultProviderEndpoints()
	}
	if c.Logger == nil {
		c.Logger = NewLogger(c.LogLevel)
	}
}

// RunReconciler runs a reconciler until ctx ends.
func RunReconciler(ctx context.Context, cfg ReconcilerConfig) error {
	cfg.applyDefaults()
	sealer, err := newSealer(cfg.Secret, cfg.PreviousSecrets) // without one, provider pools wait
	if err != nil {
		return err
	}
	rdb, err := OpenRedis(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	db, err := OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	// Warm instances are made by the API's own code, so they are sealed and
	// counted against their owner's quota as every instance is.
	warm := control.New(db, control.Config{Sealer: sealer, Logger: cfg.Logger, HostSilentAfter: cfg.HostSilentAfter})
	var hostCA *hostca.Authority // pins provider bootstraps' join scripts
	if sealer != nil {
		hostCA = hostca.New(hostca.Config{DB: db, Sealer: sealer, Logger: cfg.Logger})
	}
	r := reconciler.New(reconciler.Config{
		DB: db, Redis: rdb, Prefix: cfg.RedisPrefix, Workers: cfg.Workers,
		HostSilentAfter: cfg.HostSilentAfter, RescanInterval: cfg.RescanInterval, ClaimIdle: cfg.ClaimIdle,
		SweepInterval: cfg.SweepInterval, OrphanGrace: cfg.OrphanGrace, Logger: cfg.Logger,
		Sealer: sealer, Drivers: Drivers(cfg.Drivers), SandboxInterval: cfg.SandboxInterval, Warm: warm,
		UsageInterval: cfg.UsageInterval, UsageSettle: cfg.UsageSettle,
		SnapshotTimeout: cfg.SnapshotTimeout, CertifiedMargin: cfg.CertifiedMargin,
		HostURL: cfg.HostURL, SeedURL: cfg.SeedURL, HostCA: hostCA,
		BootstrapTokenTTL: cfg.BootstrapTokenTTL, BootstrapTimeout: cfg.BootstrapTimeout,
	})
	reg := server.NewRegistry()
	reg.MustRegister(r.Collectors()...)
	ready := func(ctx context.Context) error { return server.Ready(ctx, db, rdb) }
	return withOps(cfg.MetricsListen, cfg.Profiles, reg, ready, cfg.Logger, func() error { return r.Run(ctx) })
}
