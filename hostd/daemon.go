// Package hostd is the host daemon: `better-compute host`, one per
// hypervisor host. It long-polls the host's NodeSpec from the gateway,
// converges the host to it through a Runtime (a hypervisor driver) and
// reports what runs.
//
// # Loop
//
// Three goroutines share the work. One long-polls the gateway and hands each
// new NodeSpec to the main loop, which keeps only the newest. One posts the
// reports the main loop makes, also keeping only the newest, and retries
// with backoff. The main loop alone touches the Runtime:
//
//   - on a new spec, and on every heartbeat, it converges and reports;
//   - when the Runtime signals Changes (a domain crashed, was destroyed by
//     hand, finished booting) it only reports, so that the gateway hears of
//     it at once; the next heartbeat acts on it. A crashed domain that should
//     run is thus reported stopped, with its reason, before it is started
//     again, and a guest that keeps crashing restarts at most once a
//     heartbeat.
//
// Until the first spec arrives the daemon acts on nothing: it reports the
// domains the Runtime holds, at generation 0, and undefines none of them.
// After a restart it adopts the domains it finds and defines only the
// missing ones.
//
// # Converging
//
// For each instance of the spec, one after another, the daemon defines the
// domain if it is missing, then drives its power:
//
//	power     domain stopped    domain running   domain paused
//	running   Start             -                Resume
//	stopped   -                 Shutdown         Shutdown
//	paused    Start, Pause (1)  Pause (1)        -
//
// (1) once the guest has booted (Runtime.Booted); until then the domain is
// left running, and reported so, and a later converge pauses it. A paused
// instance whose domain is stopped is thus started and then paused: a
// booted guest, frozen, ready to resume at once (a warm instance).
// A stopped instance's paused domain is shut down as it is; the Runtime
// destroys it after ShutdownTimeout if the frozen guest cannot answer. Then
// every domain that is not in the spec is undefined.
//
// When Define or Start of an instance fails, or its power is unknown, the
// instance is failed: it is reported as hostproto.StateFailed with the error
// as its reason, and left alone, not retried, until its spec entry changes
// (any field) or it leaves the spec. Other calls that fail (Resume,
// Shutdown, Pause, Undefine) are logged and tried again at the next
// converge.
//
// A domain that exists is never defined again, so a changed spec entry of
// an existing domain changes only its power.
//
// # Reports
//
// A report lists every domain the Runtime holds, running, stopped (with the
// Runtime's reason when it stopped on its own) or paused, and every failed
// instance; an instance of the spec with neither a domain nor a failure is
// absent. A running or paused domain carries its Stats (CPU time, memory),
// read from the Runtime when the report is made, so at least every
// heartbeat. Its generation is that of the spec last converged to, and it
// always carries the inventory.
package hostd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// Config configures a Daemon. ServerURL, Credential and Runtime are
// required.
type Config struct {
	// ServerURL is the base URL of the server whose host gateway the daemon
	// talks to, such as http://127.0.0.1:8080.
	ServerURL string
	// Credential is the host's credential (bch_…, from createHost), sent as
	// "Authorization: Bearer <credential>".
	Credential string
	// Runtime runs the host's domains.
	Runtime Runtime
	// HeartbeatInterval is the longest time between two reports. The daemon
	// converges again at this pace, which is when it retries the calls that
	// failed (but not a failed Define or Start) and restarts domains that
	// stopped on their own. Default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// ShutdownTimeout is how long a guest has to stop when asked before it
	// is destroyed (Runtime.Shutdown). Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// HTTPClient talks to the gateway. A spec long-poll lasts up to
	// hostproto.MaxWaitSeconds, so the client's Timeout, if it has one, must
	// be longer. Default: a client with http.DefaultTransport whose requests
	// time out after MaxWaitSeconds + 30 s.
	HTTPClient *http.Client
	// Logger is the daemon's log. Default slog.Default().
	Logger *slog.Logger
	// StateDir is where the daemon keeps its command journal
	// (StateDir/commands), so that a restarted daemon runs no command
	// twice. Empty: no journal; a restarted daemon forgets its commands
	// (tests and in-process simulations only).
	StateDir string
	// InteractiveSlots is how many commands of the interactive lane run at
	// once. Default DefaultInteractiveSlots.
	InteractiveSlots int
	// BulkSlots is how many commands of the bulk lane run at once. Default
	// DefaultBulkSlots.
	BulkSlots int
	// Protocol is the host protocol version the daemon speaks on the wire,
	// from hostproto.MinVersion to hostproto.Version. Default
	// hostproto.Version. An older one serves only to test how the gateway
	// serves older daemons: the daemon still behaves as this build's.
	Protocol int
}

// Defaults of Config.
const (
	// DefaultHeartbeatInterval is the longest time between two reports.
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultShutdownTimeout is how long a guest has to stop before it is
	// destroyed.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultInteractiveSlots is how many interactive commands run at once.
	DefaultInteractiveSlots = 4
	// DefaultBulkSlots is how many bulk commands run at once.
	DefaultBulkSlots = 1
)

func (c Config) withDefaults() Config {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: hostproto.MaxWaitSeconds*time.Second + 30*time.Second}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Protocol == 0 {
		c.Protocol = hostproto.Version
	}
	if c.InteractiveSlots <= 0 {
		c.InteractiveSlots = DefaultInteractiveSlots
	}
	if c.BulkSlots <= 0 {
		c.BulkSlots = DefaultBulkSlots
	}
	return c
}

func (c Config) check() error {
	u, err := url.Parse(c.ServerURL)
	if err != nil {
		return fmt.Errorf("hostd: server url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("hostd: server url %q is not an http(s) URL", c.ServerURL)
	}
	if c.Credential == "" {
		return errors.New("hostd: no credential")
	}
	if c.Runtime == nil {
		return errors.New("hostd: no runtime")
	}
	if c.Protocol < hostproto.MinVersion || c.Protocol > hostproto.Version {
		return fmt.Errorf("hostd: protocol %d is not between %d and %d", c.Protocol, hostproto.MinVersion, hostproto.Version)
	}
	return nil
}

// Daemon is the host daemon. Run it once.
type Daemon struct {
	cfg  Config
	log  *slog.Logger
	gw   *gateway
	conv *converger
	cmds *commander // made by Run
}

// New returns a Daemon for cfg, with defaults applied. Run checks cfg.
func New(cfg Config) *Daemon {
	cfg = cfg.withDefaults()
	return &Daemon{
		cfg: cfg,
		log: cfg.Logger,
		gw: &gateway{
			base:       strings.TrimRight(cfg.ServerURL, "/"),
			credential: cfg.Credential,
			http:       cfg.HTTPClient,
			version:    cfg.Protocol,
		},
		conv: &converger{
			rt:              cfg.Runtime,
			shutdownTimeout: cfg.ShutdownTimeout,
			log:             cfg.Logger,
			failed:          make(map[string]failure),
		},
	}
}

// Run runs the daemon until ctx ends, and then returns nil. It returns an
// error at once only when the Config is incomplete; the gateway refusing or
// failing is logged and retried, never returned.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.cfg.check(); err != nil {
		return err
	}
	journalDir := ""
	if d.cfg.StateDir != "" {
		journalDir = filepath.Join(d.cfg.StateDir, "commands")
	}
	cmds, err := newCommander(d.cfg.Runtime, journalDir, d.cfg.InteractiveSlots, d.cfg.BulkSlots, d.log)
	if err != nil {
		return fmt.Errorf("hostd: %w", err)
	}
	d.cmds = cmds
	ctx, cancel := context.WithCancel(ctx)
	specs := make(chan hostproto.NodeSpec, 1)
	reports := make(chan hostproto.Report, 1)
	var wg sync.WaitGroup
	wg.Go(func() { d.pollSpecs(ctx, specs) })
	wg.Go(func() { d.postReports(ctx, reports) })
	defer func() {
		cancel()
		wg.Wait()
		cmds.wait()
	}()

	heartbeat := time.NewTicker(d.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	changes := d.cfg.Runtime.Changes()

	// spec is the spec last received; nil until the first.
	var spec *hostproto.NodeSpec
	d.report(ctx, spec, reports)
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-specs:
			spec = &s
			d.converge(ctx, spec)
		case <-heartbeat.C:
			d.converge(ctx, spec)
		case <-changes:
			// Report only: the next heartbeat acts on what changed.
		case <-cmds.changed:
		}
		d.report(ctx, spec, reports)
	}
}

// converge converges the Runtime to spec and runs its commands; before the
// first spec it does nothing.
func (d *Daemon) converge(ctx context.Context, spec *hostproto.NodeSpec) {
	if spec == nil {
		return
	}
	d.cmds.sync(ctx, spec.Commands)
	if err := d.conv.converge(ctx, *spec); err != nil && ctx.Err() == nil {
		d.log.Warn("converge failed", "generation", spec.Generation, "err", err)
	}
}

// report hands the post goroutine a report of what the Runtime holds,
// replacing one not yet taken. The report is of spec's generation, 0 before
// the first spec. When the Runtime cannot list its domains there is no
// report; the next heartbeat tries again.
func (d *Daemon) report(ctx context.Context, spec *hostproto.NodeSpec, reports chan hostproto.Report) {
	statuses, err := d.conv.statuses(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("no report: cannot list domains", "err", err)
		}
		return
	}
	d.addStats(ctx, statuses)
	r := hostproto.Report{Protocol: d.gw.version, Instances: statuses}
	if spec != nil {
		r.Generation = spec.Generation
		r.Commands = d.cmds.statuses(spec.Commands)
	}
	// The inventory goes with every report: it is small, and a report that
	// carried it may have been replaced by a newer one before it was posted.
	if inv, err := d.cfg.Runtime.Inventory(ctx); err != nil {
		d.log.Warn("report without inventory", "err", err)
	} else {
		r.Inventory = &inv
	}
	select {
	case <-reports:
	default:
	}
	reports <- r
}
