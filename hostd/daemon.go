// Package hostd is the host daemon: `better-compute host`, one per
// hypervisor host. It long-polls the host's NodeSpec from the gateway,
// converges the host to it through a Runtime (a hypervisor driver) and
// reports what runs.
//
// # Loop
//
// Three goroutines share the gateway work. One long-polls the gateway and
// hands each new NodeSpec to the main loop, which keeps only the newest.
// One posts the reports the main loop makes, also keeping only the newest,
// and retries with backoff. The main loop decides, and hands the work to
// goroutines (converge steps, commands) so that it never waits on one:
//
//   - on a new spec, and on every heartbeat, it converges, syncs the
//     commands and reports;
//   - when a converge step ends, it converges the instances that step held
//     up, and reports;
//   - when a command changes state, it reports;
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
// Each instance of the spec whose domain is not as the spec wants gets a
// converge step, run in a goroutine of its own (at most
// Config.ConvergeSlots at once), so that one instance's define (an image
// download), undefine or 30 s shutdown never delays another's resume. An
// instance never has two steps at once: one whose step is under way when a
// converge comes is skipped, and converged again as soon as its step ends.
// A step defines the domain if it is missing, then drives its power:
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
// destroys it after ShutdownTimeout if the frozen guest cannot answer.
// Every domain that is not in the spec gets a step that undefines it.
//
// When Define or Start of an instance fails, or its power is unknown, the
// instance is failed: it is reported as hostproto.StateFailed with the error
// as its reason, and left alone, not retried, until its spec entry changes
// (any field) or it leaves the spec. Other calls that fail (Resume,
// Shutdown, Pause, Undefine) are logged and tried again at the next
// heartbeat's converge.
//
// A domain that exists is never defined again, so a changed spec entry of
// an existing domain changes only its power.
//
// # Commands
//
// The spec's commands (hostproto.Command) run in goroutines, each in its
// lane: Config.InteractiveSlots interactive and Config.BulkSlots bulk ones
// at once, beside converging. A journal, one file per command under
// Config.StateDir/commands written atomically, holds each command and its
// state, running or final: a restarted daemon runs a command journaled
// running again (the Runtime's work is idempotent by the command's
// objects, a snapshot by its ID), and reports a final one from the journal
// without running it again. A command the spec says to abandon is stopped
// if it runs, what it made is removed (a snapshot is purged, even one that
// succeeded) and it is abandoned. One still running at its Deadline is
// stopped, cleaned up and failed ("deadline passed"). One that leaves the
// spec is stopped and cleaned up if it runs, and forgotten.
//
// # Reports
//
// A report lists every domain the Runtime holds, running, stopped (with the
// Runtime's reason when it stopped on its own) or paused, every failed
// instance, and every instance whose define is under way (defining); an
// instance of the spec with none of these is absent. Each carries the spec
// generation it was last converged to (its step ended, or it needed none);
// the report's generation is the newest spec received. A running or paused
// domain carries its Stats (CPU time, memory), read from the Runtime when
// the report is made, so at least every heartbeat. A report carries the
// status of each command of the spec the daemon knows, and always the
// inventory. It carries the Xid events the Runtime read of the inventory's
// GPUs (the newest of each device and code) until a report carrying them
// is accepted (a report made while that one was on the wire may carry them
// again, which the gateway takes as once); the Runtime signals Changes for
// each, so one is reported at once.
//
// From protocol 5 the heartbeat's reports are whole and the others
// partial: only the statuses that changed since the last accepted report
// (no stats), and the instances that report listed and the host no longer
// has; after a failed post the next report is whole. From protocol 6 the
// heartbeat's reports are partial too, with the stats of every running
// and paused instance, and whole every WholeReportEvery heartbeats. Each status's
// generation is then its entry's, which stays put while the entry does.
// The spec long-poll asks for a delta to the spec held and makes it whole
// from it (or asks for the whole spec when it cannot).
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

// Config configures a Daemon. ServerURL, Runtime and Credential or HostID
// are required.
type Config struct {
	// ServerURL is the base URL of the server whose host gateway the daemon
	// talks to, such as http://127.0.0.1:8080.
	ServerURL string
	// Credential is the host's credential (bch_…, from createHost), sent as
	// "Authorization: Bearer <credential>". Empty when the host proves
	// itself by certificate (HostID).
	Credential string
	// HostID is the host's ID (host_…), sent as hostproto.HostHeader when
	// HTTPClient presents the host's certificate (hostcert); the gateway
	// checks it is the certificate's. Empty: Credential is used.
	HostID string
	// Runtime runs the host's domains.
	Runtime Runtime
	// RuntimeName is the name of Runtime the daemon tells the gateway
	// (hostproto.RuntimeHeader), such as vps.RuntimeLibvirtKVM; the
	// gateway refuses a host whose runtime is not its pool's. Empty: not
	// told (tests that speak to no real gateway).
	RuntimeName string
	// HeartbeatInterval is the longest time between two reports. The daemon
	// converges again at this pace, which is when it retries the calls that
	// failed (but not a failed Define or Start) and restarts domains that
	// stopped on their own. Default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// WholeReportEvery is how many heartbeats make one whole report (from
	// protocol 6; the others are partial). A whole report settles what a
	// partial one cannot say; the fewer, the less an idle host costs the
	// gateway. Default DefaultWholeReportEvery.
	WholeReportEvery int
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
	// ConvergeSlots is how many instances' converge steps run at once.
	// Default DefaultConvergeSlots.
	ConvergeSlots int
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
	// DefaultWholeReportEvery makes a whole report every minute at the
	// default heartbeat.
	DefaultWholeReportEvery = 12
	// DefaultShutdownTimeout is how long a guest has to stop before it is
	// destroyed.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultConvergeSlots is how many converge steps run at once.
	DefaultConvergeSlots = 8
	// DefaultInteractiveSlots is how many interactive commands run at once.
	DefaultInteractiveSlots = 4
	// DefaultBulkSlots is how many bulk commands run at once.
	DefaultBulkSlots = 1
)

func (c Config) withDefaults() Config {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.WholeReportEvery <= 0 {
		c.WholeReportEvery = DefaultWholeReportEvery
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
	if c.ConvergeSlots <= 0 {
		c.ConvergeSlots = DefaultConvergeSlots
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
	if c.Credential == "" && c.HostID == "" {
		return errors.New("hostd: no credential and no host certificate")
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
	// xids holds the Runtime's Xid events until a report carrying them
	// is accepted.
	xids *xidBuffer
	// metrics count what it does, for Collectors.
	metrics *metrics
}

// New returns a Daemon for cfg, with defaults applied. Run checks cfg.
func New(cfg Config) *Daemon {
	cfg = cfg.withDefaults()
	m := newMetrics()
	return &Daemon{
		cfg: cfg,
		log: cfg.Logger,
		gw: &gateway{
			base:       strings.TrimRight(cfg.ServerURL, "/"),
			credential: cfg.Credential,
			hostID:     cfg.HostID,
			http:       cfg.HTTPClient,
			version:    cfg.Protocol,
			runtime:    cfg.RuntimeName,
		},
		conv:    newConverger(cfg.Runtime, cfg.ShutdownTimeout, cfg.ConvergeSlots, cfg.Logger, m),
		xids:    &xidBuffer{log: cfg.Logger},
		metrics: m,
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
	reports := make(chan outgoing, 1)
	var wg sync.WaitGroup
	wg.Go(func() { d.pollSpecs(ctx, specs) })
	wg.Go(func() { d.postReports(ctx, reports) })
	defer func() {
		cancel()
		wg.Wait()
		cmds.wait()
		d.conv.wait()
	}()

	heartbeat := time.NewTicker(d.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	changes := d.cfg.Runtime.Changes()

	// spec is the spec last received; nil until the first.
	var spec *hostproto.NodeSpec
	d.report(ctx, spec, reports, outgoing{whole: true, heartbeat: true})
	for beats := 1; ; {
		var o outgoing
		select {
		case <-ctx.Done():
			return nil
		case s := <-specs:
			spec = &s
			d.converge(ctx, spec)
		case <-heartbeat.C:
			o.heartbeat = true
			o.whole = d.gw.version < hostproto.HeartbeatVersion || beats%d.cfg.WholeReportEvery == 0
			beats++
			d.converge(ctx, spec)
		case <-changes:
			// Report only: the next heartbeat acts on what changed.
		case <-cmds.changed:
		case <-d.conv.ended:
			// A step ended: converge the instances it held up, and report.
			if again := d.conv.again(); spec != nil && len(again) > 0 {
				d.convergeOnly(ctx, spec, again)
			}
		}
		d.report(ctx, spec, reports, o)
	}
}

// converge converges the Runtime to spec and runs its commands; before the
// first spec it does nothing.
func (d *Daemon) converge(ctx context.Context, spec *hostproto.NodeSpec) {
	if spec == nil {
		return
	}
	d.cmds.sync(ctx, spec.Commands)
	d.convergeOnly(ctx, spec, nil)
}

// convergeOnly converges the instances of only (nil: all) to spec.
func (d *Daemon) convergeOnly(ctx context.Context, spec *hostproto.NodeSpec, only map[string]bool) {
	if err := d.conv.converge(ctx, *spec, only); err != nil && ctx.Err() == nil {
		d.log.Warn("converge failed", "generation", spec.Generation, "err", err)
	}
}

// report hands the post goroutine a report of what the Runtime holds,
// replacing one not yet taken (which it is whole, or a heartbeat's, when
// either is). The report is of spec's generation, 0 before the first
// spec. o says how to post it (outgoing). When the Runtime cannot list its
// domains there is no report; the next heartbeat tries again.
func (d *Daemon) report(ctx context.Context, spec *hostproto.NodeSpec, reports chan outgoing, o outgoing) {
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
	d.xids.add(d.cfg.Runtime.Xids())
	if inv, err := d.cfg.Runtime.Inventory(ctx); err != nil {
		d.log.Warn("report without inventory", "err", err)
	} else {
		r.Inventory = &inv
		if d.gw.version >= hostproto.XidsVersion {
			// Only with the inventory: its GPUs say which Xids the gateway takes.
			r.Xids = d.xids.report(inv.GPUs)
		}
	}
	if d.gw.version < hostproto.CommandsVersion {
		r = asOlder(r, d.gw.version)
	}
	select {
	case old := <-reports:
		o.whole, o.heartbeat = o.whole || old.whole, o.heartbeat || old.heartbeat
	default:
	}
	o.report = r
	reports <- o
}

// asOlder renders r for an older protocol, which knows no instance being
// defined: such an instance is left out, absent, as older daemons said.
func asOlder(r hostproto.Report, version int) hostproto.Report {
	instances := make([]hostproto.InstanceStatus, 0, len(r.Instances))
	for _, st := range r.Instances {
		if st.State != hostproto.StateDefining {
			instances = append(instances, st)
		}
	}
	r.Instances = instances
	return r.As(version)
}
