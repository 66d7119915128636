// Package reconciler does the work the API records: it relays the outbox to
// a Redis Stream, consumes the stream through a consumer group, and hands
// each entry to the reconciler kind registered for its topic (vps.instances
// moves each instance toward its desired state one guarded transition at a
// time, queuing a REBOOTING instance's host command; vps.sandboxes keeps
// each sandbox template's warm pool; vps.snapshots queues sandbox
// snapshots' host commands; vps.commands settles host commands that ended).
// Periodic work (the rescan, provider sweeps, the sandbox loop, usage
// metering, certificate lapses) runs once per interval
// across all reconcile processes. Postgres is the truth; the stream only
// says where to look.
package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
)

// Config configures a Reconciler.
type Config struct {
	// DB is the database. Required.
	DB *pgxpool.Pool
	// Redis carries the work stream and events. Required.
	Redis redis.UniversalClient
	// Prefix starts every Redis key and channel. Default "bc:".
	Prefix string
	// Consumer names this process in the consumer group. Default host-pid.
	Consumer string
	// Workers is how many instances are converged at once. Default 8.
	Workers int
	// HostSilentAfter is how long a host may go without reporting before its
	// instances are LOST and nothing more is placed on it. Default 30s.
	HostSilentAfter time.Duration
	// RescanInterval is how often Postgres is scanned for instances not at
	// rest, so work lost from Redis is only delayed. Default 10s.
	RescanInterval time.Duration
	// ClaimIdle is how long an entry may stay unacknowledged on a consumer
	// before another reclaims it. Default 30s.
	ClaimIdle time.Duration
	// MaxDeliveries is how often an entry may be delivered before it is
	// dead-lettered. Default 10.
	MaxDeliveries int64
	// StreamMaxLen bounds the stream (approximately). Default 100,000.
	StreamMaxLen int64
	// Sealer opens provider credentials and user data. Required for
	// provider pools.
	Sealer *seal.Sealer
	// Drivers makes the driver of a provider account. Without it, instances
	// of provider pools wait.
	Drivers cloud.Factory
	// SweepInterval is how often each provider account's servers are
	// listed, by all reconcilers together. Default 10s: 360 of the 3,600
	// requests an hour Hetzner allows a project.
	SweepInterval time.Duration
	// OrphanGrace is how long a server with our label and no live instance
	// may live before the sweep deletes it. Default 10m.
	OrphanGrace time.Duration
	// ProviderTimeout bounds one step's calls to a provider, made while the
	// instance's row is locked. Default 10m: a Proxmox full clone on slow
	// storage takes minutes, and one cut short is deleted and made again.
	ProviderTimeout time.Duration
	// SandboxInterval is how often, by all reconcilers together,
	// sandboxes past their deadline are expired, host commands past
	// theirs failed, and every warm pool is looked at
	// (BC_SANDBOX_INTERVAL). Default 15s.
	SandboxInterval time.Duration
	// SnapshotTimeout is how long a host has to take a sandbox snapshot
	// (the instance.snapshot command's deadline) before it fails
	// (BC_SNAPSHOT_TIMEOUT). Default 1h.
	SnapshotTimeout time.Duration
	// UsageInterval is the length of one metered interval: the vps.usage
	// job writes one usage row per instance per interval
	// (BC_USAGE_INTERVAL). Default 5m.
	UsageInterval time.Duration
	// UsageSettle is how long after an interval ends it is metered, so the
	// state changes recorded in it have committed (BC_USAGE_SETTLE).
	// Default 10s.
	UsageSettle time.Duration
	// HostURL is serve's host listener as a provider bootstrap's machine
	// reaches it (BC_HOST_URL): its join script's BC_SERVER. Without it,
	// or without HostCA, bootstraps wait and then fail at their timeout.
	HostURL string
	// SeedURL is where a Proxmox bootstrap's machine fetches its NoCloud
	// seed from serve (BC_BOOTSTRAP_SEED_URL). Default HostURL.
	SeedURL string
	// HostCA is the host CA whose fingerprint join scripts pin.
	HostCA *hostca.Authority
	// BootstrapTokenTTL is how long a bootstrap's join token can be used
	// (BC_BOOTSTRAP_TOKEN_TTL). Default 1h.
	BootstrapTokenTTL time.Duration
	// BootstrapTimeout is how long a bootstrap's machine has to join
	// before it is deleted and the bootstrap FAILED, and how long its
	// machine's creation may be retried (BC_BOOTSTRAP_TIMEOUT). Default
	// 15m.
	BootstrapTimeout time.Duration
	// CertifiedMargin is how long a host's certificate must still be valid
	// for a pool that requires certified hosts to place on it
	// (BC_CERTIFIED_MARGIN). Default vps.DefaultCertifiedMargin.
	CertifiedMargin time.Duration
	// LapseInterval is how often, by all reconcilers together, instances
	// recorded as on a certified host whose certificate has expired are
	// found and marked not certified. Default 1m.
	LapseInterval time.Duration
	// Warm adds instances to warm pools. Without it, pools are trimmed
	// and rolled over but not filled.
	Warm WarmPools
	// Logger logs. Default slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultWorkers         = 8
	DefaultRescanInterval  = 10 * time.Second
	DefaultClaimIdle       = 30 * time.Second
	DefaultMaxDeliveries   = 10
	DefaultStreamMaxLen    = 100_000
	DefaultSweepInterval   = 10 * time.Second
	DefaultOrphanGrace     = 10 * time.Minute
	DefaultProviderTimeout = 10 * time.Minute
	DefaultSandboxInterval = 15 * time.Second
	DefaultSnapshotTimeout = time.Hour
	DefaultUsageInterval   = 5 * time.Minute
	DefaultUsageSettle     = 10 * time.Second

	DefaultBootstrapTokenTTL = time.Hour
	DefaultBootstrapTimeout  = 15 * time.Minute

	DefaultLapseInterval = time.Minute
)

func (c *Config) applyDefaults() {
	if c.Prefix == "" {
		c.Prefix = vps.DefaultRedisPrefix
	}
	if c.Consumer == "" {
		host, _ := os.Hostname()
		c.Consumer = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.HostSilentAfter <= 0 {
		c.HostSilentAfter = vps.DefaultHostSilentAfter
	}
	if c.RescanInterval <= 0 {
		c.RescanInterval = DefaultRescanInterval
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = DefaultClaimIdle
	}
	if c.MaxDeliveries <= 0 {
		c.MaxDeliveries = DefaultMaxDeliveries
	}
	if c.StreamMaxLen <= 0 {
		c.StreamMaxLen = DefaultStreamMaxLen
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	if c.OrphanGrace <= 0 {
		c.OrphanGrace = DefaultOrphanGrace
	}
	if c.ProviderTimeout <= 0 {
		c.ProviderTimeout = DefaultProviderTimeout
	}
	if c.SandboxInterval <= 0 {
		c.SandboxInterval = DefaultSandboxInterval
	}
	if c.SnapshotTimeout <= 0 {
		c.SnapshotTimeout = DefaultSnapshotTimeout
	}
	if c.UsageInterval <= 0 {
		c.UsageInterval = DefaultUsageInterval
	}
	if c.UsageSettle <= 0 {
		c.UsageSettle = DefaultUsageSettle
	}
	if c.SeedURL == "" {
		c.SeedURL = c.HostURL
	}
	if c.BootstrapTokenTTL <= 0 {
		c.BootstrapTokenTTL = DefaultBootstrapTokenTTL
	}
	if c.BootstrapTimeout <= 0 {
		c.BootstrapTimeout = DefaultBootstrapTimeout
	}
	if c.CertifiedMargin <= 0 {
		c.CertifiedMargin = vps.DefaultCertifiedMargin
	}
	if c.LapseInterval <= 0 {
		c.LapseInterval = DefaultLapseInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Reconciler is one `reconcile` process. Several may run against one
// database and Redis.
type Reconciler struct {
	cfg      Config
	db       *pgxpool.Pool
	rdb      redis.UniversalClient
	log      *slog.Logger
	stream   *stream
	queue    *queue[Request]
	acks     *gather[string] // stream entries of committed work
	accounts accounts
	refusals refusals
	kinds    map[string]Kind
	periodic []periodic
	metrics  *metrics
}

// New returns a Reconciler running the vps.instances, vps.sandboxes,
// vps.snapshots, vps.commands and vps.bootstraps kinds, the rescan, the
// provider sweeps, the sandbox loop, usage metering and the certificate lapse
// pass; Register and Every add more.
func New(cfg Config) *Reconciler {
	cfg.applyDefaults()
	r := &Reconciler{
		cfg:     cfg,
		db:      cfg.DB,
		rdb:     cfg.Redis,
		log:     cfg.Logger,
		stream:  newStream(cfg),
		queue:   newQueue[Request](),
		acks:    newGather[string](),
		metrics: newMetrics(),
	}
	r.Register(vps.TopicInstances, &instances{r: r})
	r.Register(vps.TopicSandboxes, &sandboxes{r: r})
	r.Register(vps.TopicSnapshots, &snapshots{r: r})
	r.Register(vps.TopicCommands, &commands{r: r})
	r.Register(vps.TopicBootstraps, &bootstraps{r: r})
	r.Every("vps.rescan", cfg.RescanInterval, r.rescan)
	// Each account's sweep is claimed once a SweepInterval (stretched
	// while its rate-limit budget runs low); this looks for due ones.
	r.Every("vps.provider-sweeps", max(cfg.SweepInterval/4, 10*time.Millisecond), r.sweepDue)
	r.Every("vps.sandboxes", cfg.SandboxInterval, r.sandboxSweep)
	r.Every("vps.usage", cfg.UsageInterval, r.meterUsage)
	r.Every("vps.certificate-lapses", cfg.LapseInterval, r.lapseCertifications)
	return r
}

// Run relays, reads and converges until ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	if err := r.stream.ensureGroup(ctx); err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.relay(ctx) })
	g.Go(func() error { return r.read(ctx) })
	g.Go(func() error { return r.reclaim(ctx) })
	for _, p := range r.periodic {
		g.Go(func() error { return r.loop(ctx, p) })
	}
	var workers sync.WaitGroup
	for range r.cfg.Workers {
		workers.Go(func() { r.work(ctx) })
	}
	worked := make(chan struct{})
	g.Go(func() error {
		workers.Wait()
		close(worked)
		return nil
	})
	g.Go(func() error { r.ackCommitted(ctx, worked); return nil })
	go func() {
		<-ctx.Done()
		r.queue.close()
	}()
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}
