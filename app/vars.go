package app

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/hostjoin"
	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
)

// The environment variables more than one process reads, each declared
// once. A process's Env lists them beside its own.

func databaseURL(p *string) conf.Var {
	return conf.String(p, "DATABASE_URL", "", "Postgres connection string, the only source of truth")
}

func redisURL(p *string) conf.Var {
	return conf.String(p, "REDIS_URL", "", "Redis connection string: the work stream and event fan-out")
}

func redisPrefix(p *string) conf.Var {
	return conf.String(p, "BC_REDIS_PREFIX", vps.DefaultRedisPrefix,
		"starts every Redis key and channel, so deployments can share a Redis; the same on every process")
}

func hostSilentAfter(p *time.Duration) conf.Var {
	return conf.Duration(p, "BC_HOST_SILENT_AFTER", vps.DefaultHostSilentAfter,
		"how long a host may go without reporting before its instances are LOST; the same on serve and reconcile")
}

// hostURL is serve's host listener as hosts reach it: join commands and
// provider bootstraps' join scripts name it.
func hostURL(p *string, doc string) conf.Var {
	return conf.Func("BC_HOST_URL", "", doc,
		func(s string) error {
			if err := hostjoin.CheckServer(s); err != nil {
				return err
			}
			*p = strings.TrimRight(s, "/")
			return nil
		})
}

func certifiedMargin(p *time.Duration) conf.Var {
	return conf.Duration(p, "BC_CERTIFIED_MARGIN", vps.DefaultCertifiedMargin,
		"how long a host's certificate must still be valid for a pool requiring certified hosts to place on it, and how soon before expiry the doctor reports it; the same on serve, reconcile and doctor")
}

func usageInterval(p *time.Duration) conf.Var {
	return conf.Duration(p, "BC_USAGE_INTERVAL", reconciler.DefaultUsageInterval,
		"the length of one metered usage interval: one usage row per instance per interval, by all reconcilers together")
}

func usageSettle(p *time.Duration) conf.Var {
	return conf.Duration(p, "BC_USAGE_SETTLE", reconciler.DefaultUsageSettle,
		"how long after a usage interval ends it is metered, so every state change in it has committed")
}

func providers(p *[]string) conf.Var {
	known := control.DefaultProviders()
	return conf.Func("BC_PROVIDERS", strings.Join(known, ","), "comma-separated provider kinds accounts may use", func(s string) error {
		list := conf.Split(s)
		for _, kind := range list {
			if !slices.Contains(known, kind) {
				return fmt.Errorf("%q is not a provider kind (%s)", kind, strings.Join(known, ", "))
			}
		}
		*p = list
		return nil
	})
}

// runtimes declares BC_RUNTIMES, the runtimes a deployment's hosted pools
// may run; an unknown name is refused, so the process says so at start.
func runtimes(p *[]string) conf.Var {
	var known []string
	for _, r := range vps.Runtimes {
		known = append(known, r.Name)
	}
	return conf.Func("BC_RUNTIMES", strings.Join(vps.DefaultRuntimes(), ","),
		"comma-separated runtimes the deployment's hosted pools run ("+strings.Join(known, ", ")+"); a new pool's default is the first", func(s string) error {
			list := conf.Split(s)
			for _, name := range list {
				if _, ok := vps.LookupRuntime(name); !ok {
					return fmt.Errorf("%q is not a runtime (%s)", name, strings.Join(known, ", "))
				}
			}
			*p = list
			return nil
		})
}

func providerEndpoints(p *[]string) conf.Var {
	return conf.List(p, "BC_PROVIDER_ENDPOINTS", DefaultProviderEndpoints(),
		"comma-separated hosts tenants' provider accounts may name (host, host:port or *.domain); the same on serve and reconcile")
}

func providerAllowPrivate(p *bool, value bool) conf.Var {
	return conf.Bool(p, "BC_PROVIDER_ALLOW_PRIVATE", value,
		"let provider accounts reach loopback, link-local and private addresses (an emulator, a Proxmox on a private network); the same on serve and reconcile")
}

// required marks v as a variable the process cannot do without.
func required(v conf.Var) conf.Var {
	v.Required = true
	return v
}
