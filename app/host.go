package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/better-compute/vps/hostcert"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/server"
)

// HostConfig is the configuration of `host`, the host daemon.
type HostConfig struct {
	// ServerURL is the base URL of the server whose host gateway to use
	// (--server). Default DefaultServerURL.
	ServerURL string
	// Credential is the host's credential, from createHost
	// (BC_HOST_CREDENTIAL). Required unless CredentialFile is set.
	Credential string
	// CredentialFile names a file holding the credential, which then takes
	// the place of Credential (--credential-file). Default: none.
	CredentialFile string
	// JoinToken is a one-time join token (bcj_…, from createHost or
	// createHostJoinToken) with which the daemon gets its certificate when
	// StateDir holds none, or one got with another token (--join-token,
	// BC_JOIN_TOKEN). Needs an https ServerURL and CASHA256. Default: none.
	JoinToken string
	// CASHA256 is the SHA-256 (hex) of the host CA's certificate, which the
	// server's TLS chain must hold before the join token is sent
	// (--ca-sha256, BC_CA_SHA256). Default: none.
	CASHA256 string
	// Runtime is the runtime driver, RuntimeFake or RuntimeLibvirt
	// (--runtime). Default RuntimeLibvirt.
	Runtime string
	// HeartbeatInterval is the longest time between two reports
	// (--heartbeat). Default hostd.DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// ShutdownTimeout is how long a guest has to shut down before it is
	// destroyed (--shutdown-timeout). Default hostd.DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// FakeBootDelay is how long a domain of the fake runtime boots
	// (--fake-boot-delay). Default: it runs at once.
	FakeBootDelay time.Duration
	// FakeFailStarts, when set, makes the fake runtime fail every start
	// with this reason (--fake-fail-starts). Default: none.
	FakeFailStarts string
	// FakeSnapshotDelay is how long a snapshot of the fake runtime takes
	// (--fake-snapshot-delay). Default: at once.
	FakeSnapshotDelay time.Duration
	// FakeFailSnapshots, when set, makes the fake runtime fail every
	// snapshot with this reason (--fake-fail-snapshots). Default: none.
	FakeFailSnapshots string
	// FakeGPUs is how many fake NVIDIA GPUs the fake runtime's inventory
	// has (--fake-gpus), at stable PCI addresses (fake.GPUAddress).
	// Default: none.
	FakeGPUs int
	// FakeKmsg is a file the fake runtime follows as its kernel log
	// (--fake-kmsg): each NVIDIA Xid line appended to it is an Xid event of
	// the host, as /dev/kmsg's on a real one. Default: none.
	FakeKmsg string
	// FakeProtocol is the host protocol version a daemon of the fake
	// runtime speaks (--fake-protocol), to test how the server serves older
	// daemons. Default: the current one.
	FakeProtocol int
	// LibvirtURI is the libvirt connection URI (--libvirt-uri). Default:
	// the libvirt runtime's.
	LibvirtURI string
	// LibvirtSocket is libvirtd's unix socket (--libvirt-socket). Default:
	// the libvirt runtime's.
	LibvirtSocket string
	// DomainType is kvm or qemu, software emulation (--domain-type).
	// Default: the libvirt runtime's, kvm when /dev/kvm exists.
	DomainType string
	// StateDir holds the daemon's command journal (commands/), and the
	// runtime's files: the image cache, overlays, seeds, console logs and
	// snapshots of the libvirt runtime; the snapshots of the fake one
	// (--state-dir). Default DefaultHostStateDir for libvirt; for the fake
	// runtime FakeStateDir(credential), so that a restarted fake host finds
	// its journal and snapshots without being told where.
	StateDir string
	// SnapshotDir is the runtime's snapshot store (--snapshot-dir): a
	// directory shared by hosts, at the same path on each, lets a
	// deployment restore a snapshot on any of them. Default: the
	// runtime's, StateDir/snapshots.
	SnapshotDir string
	// InteractiveSlots is how many interactive commands run at once
	// (--interactive-slots). Default hostd.DefaultInteractiveSlots.
	InteractiveSlots int
	// BulkSlots is how many bulk commands (snapshots) run at once
	// (--bulk-slots). Default hostd.DefaultBulkSlots.
	BulkSlots int
	// ConvergeSlots is how many instances converge at once
	// (--converge-slots). Default hostd.DefaultConvergeSlots.
	ConvergeSlots int
	// Bridge is the host bridge guest NICs join (--bridge). Default:
	// user-mode networking, which cannot enforce a network policy.
	Bridge string
	// BootTimeout is how long after its start a guest whose console never
	// says it booted counts as booted, for the pause of a warm instance
	// (--boot-timeout). Default: the libvirt runtime's.
	BootTimeout time.Duration
	// MetricsListen is the HTTP address serving /metrics, /healthz and
	// /readyz (--metrics-listen). Default: none.
	MetricsListen string
	// LogLevel is the least level logged (--log-level, BC_LOG_LEVEL).
	// Default slog.LevelInfo.
	LogLevel slog.Level
	// Logger is the process log. Default: JSON to stderr.
	Logger *slog.Logger
}

// Defaults of HostConfig.
const (
	// DefaultServerURL is the server of a host daemon run beside a default
	// serve.
	DefaultServerURL = "http://" + DefaultListen
	// DefaultHostStateDir is where the libvirt runtime keeps its files.
	DefaultHostStateDir = "/var/lib/better-compute"
)

// RuntimeName is the name the daemon tells the gateway its runtime driver
// runs by: vps.RuntimeLibvirtKVM for RuntimeLibvirt, vps.RuntimeFake for
// RuntimeFake.
func (c HostConfig) RuntimeName() string {
	if c.Runtime == RuntimeLibvirt {
		return vps.RuntimeLibvirtKVM
	}
	return c.Runtime
}

// The runtime drivers of HostConfig.Runtime.
const (
	// RuntimeFake simulates a hypervisor in the process.
	RuntimeFake = "fake"
	// RuntimeLibvirt runs guests through libvirtd.
	RuntimeLibvirt = "libvirt"
)

// Env returns the environment variables host reads, bound to c's fields:
// the table both conf.Read and --help use.
func (c *HostConfig) Env() []conf.Var {
	return []conf.Var{
		conf.String(&c.Credential, "BC_HOST_CREDENTIAL", "",
			"the host's credential, as createHost returned it, unless --credential-file is given"),
		conf.String(&c.JoinToken, "BC_JOIN_TOKEN", "",
			"a one-time join token (bcj_…) to get the host's certificate with, as --join-token"),
		conf.String(&c.CASHA256, "BC_CA_SHA256", "",
			"SHA-256 (hex) of the host CA's certificate the server must present, as --ca-sha256"),
		logLevel(&c.LogLevel),
	}
}

// Flags defines host's flags on fs, bound to c's fields.
func (c *HostConfig) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.ServerURL, "server", DefaultServerURL, "base `URL` of the server whose host gateway to use")
	fs.StringVar(&c.Runtime, "runtime", RuntimeLibvirt, "runtime `driver`: "+RuntimeFake+" (simulated) or "+RuntimeLibvirt)
	fs.StringVar(&c.CredentialFile, "credential-file", "", "`file` holding the host credential, instead of BC_HOST_CREDENTIAL")
	fs.StringVar(&c.JoinToken, "join-token", "", "one-time join `token` (bcj_…) to get the host's certificate with (needs an https --server and --ca-sha256)")
	fs.StringVar(&c.CASHA256, "ca-sha256", "", "SHA-256 `hex` of the host CA's certificate, pinned when joining")
	conf.DurationFlag(fs, &c.HeartbeatInterval, "heartbeat", hostd.DefaultHeartbeatInterval, "longest time between two reports")
	conf.DurationFlag(fs, &c.ShutdownTimeout, "shutdown-timeout", hostd.DefaultShutdownTimeout,
		"how long a guest has to shut down before it is destroyed")
	fs.DurationVar(&c.FakeBootDelay, "fake-boot-delay", 0, "fake runtime: how long a started domain boots")
	fs.StringVar(&c.FakeFailStarts, "fake-fail-starts", "", "fake runtime: fail every start with this `reason`")
	fs.DurationVar(&c.FakeSnapshotDelay, "fake-snapshot-delay", 0, "fake runtime: how long a snapshot takes")
	fs.StringVar(&c.FakeFailSnapshots, "fake-fail-snapshots", "", "fake runtime: fail every snapshot with this `reason`")
	fs.IntVar(&c.FakeGPUs, "fake-gpus", 0, "fake runtime: how many fake NVIDIA GPUs the host has, at stable PCI addresses")
	fs.StringVar(&c.FakeKmsg, "fake-kmsg", "", "fake runtime: `file` followed as the kernel log; NVIDIA Xid lines appended to it are the host's Xid events")
	fs.IntVar(&c.FakeProtocol, "fake-protocol", 0, "fake runtime: host protocol `version` to speak, to test older daemons; 0: the current one")
	fs.StringVar(&c.LibvirtURI, "libvirt-uri", "", "libvirt runtime: connection `URI`; empty: the runtime's default")
	fs.StringVar(&c.LibvirtSocket, "libvirt-socket", "", "libvirt runtime: libvirtd's unix `socket`; empty: the runtime's default")
	fs.StringVar(&c.DomainType, "domain-type", "", "libvirt runtime: kvm or qemu (software emulation); empty: kvm when /dev/kvm exists")
	fs.StringVar(&c.StateDir, "state-dir", "", "`directory` for the command journal and the runtime's files (libvirt: images, overlays, seeds, console logs, snapshots; fake: snapshots); empty: "+DefaultHostStateDir+" (libvirt), or one under the temp dir named after the host credential (fake)")
	fs.IntVar(&c.InteractiveSlots, "interactive-slots", hostd.DefaultInteractiveSlots, "how many interactive commands run at once")
	fs.IntVar(&c.BulkSlots, "bulk-slots", hostd.DefaultBulkSlots, "how many bulk commands (snapshots) run at once")
	fs.IntVar(&c.ConvergeSlots, "converge-slots", hostd.DefaultConvergeSlots, "how many instances converge at once (define, start, shutdown, …)")
	fs.StringVar(&c.SnapshotDir, "snapshot-dir", "",
		"`directory` of the snapshot store; one shared by hosts (same path on each) lets restores run on any of them; empty: STATE-DIR/snapshots")
	fs.StringVar(&c.Bridge, "bridge", "", "libvirt runtime: host `bridge` for guest NICs; empty: user-mode networking (no network policies)")
	fs.DurationVar(&c.BootTimeout, "boot-timeout", 0,
		"libvirt runtime: how long after its start a guest whose console never says it booted counts as booted (a warm instance is paused then); 0: the runtime's default, 2m")
	metricsListenFlag(fs, &c.MetricsListen)
	logLevelFlag(fs, &c.LogLevel)
}

func (c *HostConfig) applyDefaults() {
	if c.ServerURL == "" {
		c.ServerURL = DefaultServerURL
	}
	if c.Runtime == "" {
		c.Runtime = RuntimeLibvirt
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = hostd.DefaultHeartbeatInterval
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = hostd.DefaultShutdownTimeout
	}
	if c.InteractiveSlots <= 0 {
		c.InteractiveSlots = hostd.DefaultInteractiveSlots
	}
	if c.BulkSlots <= 0 {
		c.BulkSlots = hostd.DefaultBulkSlots
	}
	if c.ConvergeSlots <= 0 {
		c.ConvergeSlots = hostd.DefaultConvergeSlots
	}
	if c.Logger == nil {
		c.Logger = NewLogger(c.LogLevel)
	}
}

// Prepare applies c's defaults and reads the credential file, if one is
// named; it refuses a configuration without a credential. The runtime is
// made from the prepared configuration, then RunHost runs on it.
func (c *HostConfig) Prepare() error {
	c.applyDefaults()
	if c.CredentialFile != "" {
		b, err := os.ReadFile(c.CredentialFile)
		if err != nil {
			return fmt.Errorf("read credential: %w", err)
		}
		c.Credential = strings.TrimSpace(string(b))
	}
	if c.StateDir == "" { // a default that depends on the runtime and the credential
		c.StateDir = DefaultHostStateDir
		if c.Runtime == RuntimeFake {
			seed := c.Credential
			if seed == "" {
				seed = c.JoinToken
			}
			if seed == "" {
				return errors.New("a fake host without a credential or join token needs --state-dir, where its certificate is")
			}
			c.StateDir = FakeStateDir(seed)
		}
	}
	if c.Credential == "" && c.JoinToken == "" && !hostcert.Exists(c.StateDir) {
		return errors.New("no host credential: set --join-token (createHost returns one and its join command), or BC_HOST_CREDENTIAL or --credential-file")
	}
	if c.JoinToken != "" && (!strings.HasPrefix(c.ServerURL, "https://") || c.CASHA256 == "") {
		return errors.New("--join-token needs an https:// --server (serve's BC_HOST_LISTEN) and --ca-sha256, as the join command gives them")
	}
	if c.FakeProtocol != 0 && c.Runtime != RuntimeFake {
		return fmt.Errorf("--fake-protocol is for the %s runtime only", RuntimeFake)
	}
	if (c.FakeGPUs != 0 || c.FakeKmsg != "") && c.Runtime != RuntimeFake {
		return fmt.Errorf("--fake-gpus and --fake-kmsg are for the %s runtime only", RuntimeFake)
	}
	if c.FakeGPUs < 0 || c.FakeGPUs > maxFakeGPUs {
		return fmt.Errorf("--fake-gpus %d is not between 0 and %d", c.FakeGPUs, maxFakeGPUs)
	}
	return nil
}

// maxFakeGPUs bounds --fake-gpus: the fake's addresses stay on distinct
// PCI buses.
const maxFakeGPUs = 64

// FakeStateDir is the default state dir of a fake host: under the temp
// dir, named after a digest of its credential, so that each simulated host
// has its own and finds it again when it restarts.
func FakeStateDir(credential string) string {
	sum := sha256.Sum256([]byte(credential))
	return filepath.Join(os.TempDir(), "better-compute-fake-host-"+hex.EncodeToString(sum[:8]))
}

// RunHost runs the host daemon of a prepared c on rt until ctx ends. With
// a certificate in the state dir it speaks mutual TLS and keeps the
// certificate renewed; else with a join token it joins first; else it uses
// its bearer credential.
func RunHost(ctx context.Context, c HostConfig, rt hostd.Runtime) error {
	id, err := hostIdentity(ctx, c)
	if err != nil {
		return err
	}
	cfg := hostd.Config{
		ServerURL: c.ServerURL, Credential: c.Credential, Runtime: rt, RuntimeName: c.RuntimeName(),
		HeartbeatInterval: c.HeartbeatInterval, ShutdownTimeout: c.ShutdownTimeout, Logger: c.Logger,
		Protocol: c.FakeProtocol, StateDir: c.StateDir, InteractiveSlots: c.InteractiveSlots, BulkSlots: c.BulkSlots,
		ConvergeSlots: c.ConvergeSlots,
	}
	var renewing sync.WaitGroup
	if id != nil {
		cfg.Credential, cfg.HostID = "", id.HostID()
		cfg.HTTPClient = &http.Client{Transport: id.Transport(), Timeout: hostproto.MaxWaitSeconds*time.Second + 30*time.Second}
		renewCtx, stop := context.WithCancel(ctx)
		defer func() { stop(); renewing.Wait() }()
		renewing.Go(func() { id.KeepRenewed(renewCtx, c.ServerURL, c.Logger) })
		c.Logger.Info("host certificate", "host", id.HostID(), "not_after", id.NotAfter())
	}
	d := hostd.New(cfg)
	reg := server.NewRegistry()
	reg.MustRegister(d.Collectors()...)
	return withOps(c.MetricsListen, false, reg, d.Ready, c.Logger, func() error { return d.Run(ctx) })
}

// hostIdentity returns the host's certificate: the one in the state dir,
// unless a join token it was not got with is given, which joins again.
// Nil: none, the daemon uses its bearer credential. A join that fails for
// the network is retried until ctx ends; one the server refuses is an
// error.
func hostIdentity(ctx context.Context, c HostConfig) (*hostcert.Identity, error) {
	have := hostcert.Exists(c.StateDir)
	if c.JoinToken == "" || (have && hostcert.Joined(c.StateDir, c.JoinToken)) {
		if !have {
			return nil, nil
		}
		id, err := hostcert.Load(c.StateDir)
		if err != nil {
			return nil, err
		}
		if id.Expired() {
			c.Logger.Error("host certificate expired: this host needs a new join token (createHostJoinToken), then restart the daemon with --join-token",
				"host", id.HostID(), "not_after", id.NotAfter())
		}
		return id, nil
	}
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		id, err := hostcert.Join(ctx, c.ServerURL, c.JoinToken, c.CASHA256, c.StateDir)
		if err == nil {
			c.Logger.Info("joined", "host", id.HostID(), "not_after", id.NotAfter())
			return id, nil
		}
		if errors.Is(err, hostcert.ErrRefused) {
			return nil, err
		}
		c.Logger.Warn("join", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
