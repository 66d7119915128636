package app

import (
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/internal/vps"
)

// DevConfig is the configuration of `dev`, which runs the whole system on
// one machine: serve's, and what dev adds.
type DevConfig struct {
	// Config is serve's configuration. What serve requires and leaves
	// unset, dev makes: see devMakes.
	Config
	// StateDir keeps the dev secret, the operator and member tokens and the
	// private Postgres (--state-dir). Default DefaultDevStateDir.
	StateDir string
	// SimHosts is how many simulated hosts, with a reconciler and demo
	// data, run in the process (--sim). Default: none.
	SimHosts int
	// HetznerEmulator is where, with SimHosts, an emulated Hetzner Cloud API
	// is served, with a provider pool on it (--hetzner-emulator); "" for
	// none. Default devenv.DefaultHetznerAddr, or a
	// free port when that is taken.
	HetznerEmulator string
	// ProxmoxEmulator is where, with SimHosts, an emulated Proxmox VE API is
	// served, with a provider pool on it (--proxmox-emulator); "" for none.
	// Default devenv.DefaultProxmoxAddr, or a free port when that is taken.
	ProxmoxEmulator string
	// UsageInterval is, with SimHosts, the length of the in-process
	// reconciler's metered usage intervals (BC_USAGE_INTERVAL). Default
	// reconciler.DefaultUsageInterval.
	UsageInterval time.Duration
	// UsageSettle is, with SimHosts, how long after an interval ends the
	// in-process reconciler meters it (BC_USAGE_SETTLE). Default
	// reconciler.DefaultUsageSettle.
	UsageSettle time.Duration
}

// Defaults of DevConfig.
const (
	// DefaultDevStateDir is relative to where dev runs, so each checkout
	// has its own.
	DefaultDevStateDir = ".dev"
	// DefaultDevHostListen is dev's host listener (BC_HOST_LISTEN), beside
	// its emulators' ports, so join commands work against dev as written;
	// when it is taken, dev listens on a free port of loopback instead.
	DefaultDevHostListen = "127.0.0.1:8093"
)

// devMakes says what dev makes for the variables serve requires, when they
// are unset.
var devMakes = map[string]string{
	"DATABASE_URL":       "a private Postgres",
	"REDIS_URL":          "an in-process Redis",
	"BC_SECRET":          "kept in --state-dir",
	"BC_BOOTSTRAP_TOKEN": "kept in --state-dir",
}

// devDefaults are dev's own defaults of serve's variables: its emulators
// listen on loopback, so provider accounts may reach private addresses
// (BC_PROVIDER_ALLOW_PRIVATE=false turns that off), it serves hosts'
// mutual TLS on loopback, and it logs warnings and errors only, beside its
// own summary. DevConfig.Flags applies them.
var devDefaults = map[string]string{
	"BC_PROVIDER_ALLOW_PRIVATE": "true",
	"BC_HOST_LISTEN":            DefaultDevHostListen,
	"BC_LOG_LEVEL":              "WARN",
	"BC_RUNTIMES":               vps.RuntimeLibvirtKVM + "," + vps.RuntimeFake,
}

// HostListener settles where dev's host listener listens and the URL its
// join commands name: dev's default address, when it is taken, moves to a
// free port of loopback (moved says so), and with no BC_HOST_URL set, hosts
// reach a loopback listener at its address (serve's default names the
// machine's hostname, which a laptop may not resolve). Another address is
// left to serve's defaults.
func (c *DevConfig) HostListener() (moved bool, err error) {
	if c.HostListen != DefaultDevHostListen {
		return false, nil
	}
	addr, err := devenv.Available(c.HostListen)
	if err != nil {
		return false, fmt.Errorf("host listener: %w", err)
	}
	moved, c.HostListen = addr != c.HostListen, addr
	if c.HostURL == "" {
		c.HostURL = "https://" + addr
	}
	return moved, nil
}

// Reconciler is the configuration of the reconciler dev runs with
// SimHosts: serve's shared settings and dev's usage metering.
func (c *DevConfig) Reconciler() ReconcilerConfig {
	rc := c.Config.Reconciler()
	rc.UsageInterval, rc.UsageSettle = c.UsageInterval, c.UsageSettle
	return rc
}

// Env returns the environment variables dev reads, bound to c's fields:
// serve's, none of them required, and the in-process reconciler's usage
// metering.
func (c *DevConfig) Env() []conf.Var {
	vars := append(c.Config.Env(), usageInterval(&c.UsageInterval), usageSettle(&c.UsageSettle))
	for i, v := range vars {
		if made, ok := devMakes[v.Name]; ok {
			vars[i].Required, vars[i].Default = false, made
		}
		if def, ok := devDefaults[v.Name]; ok {
			vars[i].Default = def
		}
	}
	return vars
}

// Flags defines dev's flags on fs, serve's among them, bound to c's fields,
// and sets the fields of devDefaults, which the environment may change.
func (c *DevConfig) Flags(fs *flag.FlagSet) {
	c.Config.Flags(fs)
	c.ProviderEndpoints.AllowPrivate = true
	c.LogLevel = slog.LevelWarn
	fs.Lookup("log-level").DefValue = c.LogLevel.String()
	c.Runtimes = []string{vps.RuntimeLibvirtKVM, vps.RuntimeFake}
	c.HostListen = DefaultDevHostListen
	fs.StringVar(&c.StateDir, "state-dir", DefaultDevStateDir,
		"`directory` for the dev secret, operator token and private Postgres")
	fs.IntVar(&c.SimHosts, "sim", 0,
		"run `N` simulated hosts (fake hypervisors) and a reconciler in-process, with demo data")
	fs.StringVar(&c.HetznerEmulator, "hetzner-emulator", devenv.DefaultHetznerAddr,
		"with --sim, serve an emulated Hetzner Cloud API on `address` with a provider pool on it (\"\" for none; the default falls back to a free port when taken)")
	fs.StringVar(&c.ProxmoxEmulator, "proxmox-emulator", devenv.DefaultProxmoxAddr,
		"with --sim, serve an emulated Proxmox VE API on `address` with a provider pool on it (\"\" for none; the default falls back to a free port when taken)")
}
