package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/sqlc"
)

// Defaults of StatsConfig.
const (
	// DefaultStatsInterval is how often the latest stats are written.
	DefaultStatsInterval = 5 * time.Second
	// DefaultStatsKeep is how long a sandbox's stats are kept after it
	// ended.
	DefaultStatsKeep = time.Hour
	// DefaultStatsPruneEvery is how often stats past their keep are
	// deleted.
	DefaultStatsPruneEvery = time.Minute
	// DefaultHostStatsKeep is how long a host's samples are kept.
	DefaultHostStatsKeep = 24 * time.Hour
)

// StatsConfig configures a StatsRecorder.
type StatsConfig struct {
	// Interval is how often the latest sample of each instance is written.
	// Default DefaultStatsInterval.
	Interval time.Duration
	// Keep is how long a sandbox's samples are kept after it ended.
	// Default DefaultStatsKeep.
	Keep time.Duration
	// PruneEvery is how often samples past Keep are deleted. Default
	// DefaultStatsPruneEvery.
	PruneEvery time.Duration
	// HostKeep is how long a host's samples are kept. Default
	// DefaultHostStatsKeep.
	HostKeep time.Duration
	// Logger logs failed writes. Default slog.Default().
	Logger *slog.Logger
}

func (c *StatsConfig) applyDefaults() {
	if c.Interval <= 0 {
		c.Interval = DefaultStatsInterval
	}
	if c.Keep <= 0 {
		c.Keep = DefaultStatsKeep
	}
	if c.PruneEvery <= 0 {
		c.PruneEvery = DefaultStatsPruneEvery
	}
	if c.HostKeep <= 0 {
		c.HostKeep = DefaultHostStatsKeep
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// StatSample is what an instance used of its host when its host reported.
type StatSample struct {
	At time.Time
	// CPUTimeNs is the domain's CPU time since it started, all vCPUs.
	CPUTimeNs   int64
	MemoryBytes int64
}

// StatsRecorder keeps the stats hosts report: of sandboxes' instances,
// and of each host as the sum over its instances. It takes every report's
// samples in memory, and writes the latest of each instance and of each
// host every Interval, so the database sees one row per sandbox and per
// host per interval however often hosts report; it deletes a sandbox's
// samples Keep after the sandbox ended, and a host's HostKeep after they
// were taken.
type StatsRecorder struct {
	q   *sqlc.Queries
	cfg StatsConfig

	mu      sync.Mutex
	pending map[uuid.UUID]StatSample
	// hosts holds each host's latest report since the last flush, and
	// flushed its last flushed one, by host: a host's CPU use is what its
	// instances used between the two.
	hosts, flushed map[uuid.UUID]hostReport
}

// hostReport is the samples of one host's report, by instance: every
// running or paused instance it holds (hostproto.Report.Stats).
type hostReport struct {
	at      time.Time
	samples map[uuid.UUID]StatSample
}

// NewStatsRecorder returns a StatsRecorder on db; Run must run for it to
// write anything.
func NewStatsRecorder(db *pgxpool.Pool, cfg StatsConfig) *StatsRecorder {
	cfg.applyDefaults()
	return &StatsRecorder{q: sqlc.New(db), cfg: cfg, pending: map[uuid.UUID]StatSample{},
		hosts: map[uuid.UUID]hostReport{}, flushed: map[uuid.UUID]hostReport{}}
}

// Add takes the samples of one report of host, taken at, by instance ID.
// It never blocks on the database: it runs in a host's report.
func (r *StatsRecorder) Add(host uuid.UUID, at time.Time, samples map[uuid.UUID]StatSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, s := range samples {
		if prev, ok := r.pending[id]; !ok || s.At.After(prev.At) {
			r.pending[id] = s
		}
	}
	if prev, ok := r.hosts[host]; !ok || at.After(prev.at) {
		r.hosts[host] = hostReport{at: at, samples: samples}
	}
}

// Flush writes the samples taken since the last flush, of the instances
// that run sandboxes and of the hosts, and returns how many sandbox
// samples it wrote. Samples it could not write are dropped: the next
// report brings new ones.
func (r *StatsRecorder) Flush(ctx context.Context) (int64, error) {
	n, err := r.flushSandboxes(ctx)
	return n, errors.Join(err, r.flushHosts(ctx))
}

// flushSandboxes writes the latest sample of each instance that runs a
// sandbox, and returns how many it wrote.
func (r *StatsRecorder) flushSandboxes(ctx context.Context) (int64, error) {
	r.mu.Lock()
	pending := r.pending
	r.pending = map[uuid.UUID]StatSample{}
	r.mu.Unlock()
	if len(pending) == 0 {
		return 0, nil
	}
	type row struct {
		InstanceID  uuid.UUID `json:"instance_id"`
		At          time.Time `json:"at"`
		CPUTimeNs   int64     `json:"cpu_time_ns"`
		MemoryBytes int64     `json:"memory_bytes"`
	}
	rows := make([]row, 0, len(pending))
	for id, s := range pending {
		rows = append(rows, row{InstanceID: id, At: s.At.UTC(), CPUTimeNs: s.CPUTimeNs, MemoryBytes: s.MemoryBytes})
	}
	// In one order, so two flushes lock sample rows alike.
	slices.SortFunc(rows, func(a, b row) int { return slices.Compare(a.InstanceID[:], b.InstanceID[:]) })
	samples, err := json.Marshal(rows)
	if err != nil {
		return 0, fmt.Errorf("encode stats: %w", err)
	}
	n, err := r.q.InsertSandboxStats(ctx, samples)
	if err != nil {
		return 0, fmt.Errorf("write sandbox stats: %w", err)
	}
	return n, nil
}

// flushHosts writes one sample per host that reported since the last
// flush: the vCPUs its instances used since its sample before (nil when
// none of them was in it), their memory, and how many there were.
func (r *StatsRecorder) flushHosts(ctx context.Context) error {
	type row struct {
		HostID      uuid.UUID `json:"host_id"`
		At          time.Time `json:"at"`
		VcpusUsed   *float64  `json:"vcpus_used"`
		MemoryBytes int64     `json:"memory_bytes"`
		Instances   int       `json:"instances"`
	}
	r.mu.Lock()
	var rows []row
	for host, rep := range r.hosts {
		before := r.flushed[host]
		out := row{HostID: host, At: rep.at.UTC(), Instances: len(rep.samples)}
		var used float64
		counted := len(rep.samples) == 0
		for id, s := range rep.samples {
			out.MemoryBytes += s.MemoryBytes
			if p, ok := before.samples[id]; ok && s.At.After(p.At) && s.CPUTimeNs >= p.CPUTimeNs {
				used += float64(s.CPUTimeNs-p.CPUTimeNs) / float64(s.At.Sub(p.At).Nanoseconds())
				counted = true
			}
		}
		if counted {
			out.VcpusUsed = &used
		}
		r.flushed[host] = rep
		rows = append(rows, out)
	}
	r.hosts = map[uuid.UUID]hostReport{}
	r.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	samples, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("encode host stats: %w", err)
	}
	if _, err := r.q.InsertHostStats(ctx, samples); err != nil {
		return fmt.Errorf("write host stats: %w", err)
	}
	return nil
}

// Prune deletes the samples of sandboxes that ended more than Keep before
// now, and of hosts taken more than HostKeep before now, and returns how
// many it deleted.
func (r *StatsRecorder) Prune(ctx context.Context, now time.Time) (int64, error) {
	before := now.Add(-r.cfg.Keep)
	n, err := r.q.PruneSandboxStats(ctx, &before)
	if err != nil {
		return 0, fmt.Errorf("prune sandbox stats: %w", err)
	}
	m, err := r.q.PruneHostStats(ctx, now.Add(-r.cfg.HostKeep))
	if err != nil {
		return n, fmt.Errorf("prune host stats: %w", err)
	}
	return n + m, nil
}

// Run flushes every Interval and prunes every PruneEvery until ctx ends.
func (r *StatsRecorder) Run(ctx context.Context) {
	flush := time.NewTicker(r.cfg.Interval)
	defer flush.Stop()
	prune := time.NewTicker(r.cfg.PruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			if _, err := r.Flush(ctx); err != nil && ctx.Err() == nil {
				r.cfg.Logger.WarnContext(ctx, "write stats", "err", err)
			}
		case now := <-prune.C:
			if _, err := r.Prune(ctx, now); err != nil && ctx.Err() == nil {
				r.cfg.Logger.WarnContext(ctx, "prune stats", "err", err)
			}
		}
	}
}

// StatsPoint is one sample of a sandbox's use of its host.
type StatsPoint struct {
	At time.Time
	// CPU is its CPU use since the sample before, 0 to 1 of its vCPUs;
	// nil for a first sample or after its domain restarted.
	CPU         *float64
	MemoryBytes int64
}

// MaxStatsPoints bounds what SandboxStats returns: the latest points.
const MaxStatsPoints = 2000

// SandboxStats returns, oldest first, the latest samples since since
// (zero: its whole life) of a sandbox the caller may see.
func (s *Service) SandboxStats(ctx context.Context, sandbox uuid.UUID, since time.Time) ([]StatsPoint, error) {
	sbx, err := s.Sandbox(ctx, sandbox)
	if err != nil {
		return nil, err
	}
	if since.IsZero() {
		since = sbx.CreatedAt
	}
	rows, err := s.q.ListSandboxStats(ctx, sqlc.ListSandboxStatsParams{SandboxID: sandbox, Since: since, Lim: MaxStatsPoints})
	if err != nil {
		return nil, fmt.Errorf("read sandbox stats: %w", err)
	}
	out := make([]StatsPoint, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = StatsPoint{At: r.At, CPU: r.CpuFraction, MemoryBytes: r.MemoryBytes}
	}
	return out, nil
}
