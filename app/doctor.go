package app

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/better-compute/vps/doctor"
	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/seal"
)

// DoctorConfig is the configuration of `doctor`.
type DoctorConfig struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	// Required.
	DatabaseURL string
	// RedisURL is the Redis connection string (REDIS_URL). Default: none,
	// and the work stream's dead letters are not looked for.
	RedisURL string
	// RedisPrefix starts every Redis key (BC_REDIS_PREFIX). Default
	// vps.DefaultRedisPrefix.
	RedisPrefix string
	// Secret is the current sealing secret (BC_SECRET). Default: none, and
	// values sealed under another secret are not looked for.
	Secret string
	// Runtimes are the runtimes the deployment runs (BC_RUNTIMES). Default
	// vps.DefaultRuntimes().
	Runtimes []string
	// HostSilentAfter is how long a host may go without reporting
	// (BC_HOST_SILENT_AFTER). Default vps.DefaultHostSilentAfter.
	HostSilentAfter time.Duration
	// CertifiedMargin is how soon before its certificate expires a host
	// holding instances is reported (BC_CERTIFIED_MARGIN). Default
	// vps.DefaultCertifiedMargin.
	CertifiedMargin time.Duration
	// StuckAfter is how long an instance may stay in a transitional state
	// (--stuck-after). Default doctor.DefaultStuckAfter.
	StuckAfter time.Duration
	// JSON prints the findings as JSON (--json).
	JSON bool
}

// Env returns the environment variables doctor reads, bound to c's fields.
func (c *DoctorConfig) Env() []conf.Var {
	return []conf.Var{
		required(databaseURL(&c.DatabaseURL)),
		redisURL(&c.RedisURL),
		redisPrefix(&c.RedisPrefix),
		secret(&c.Secret),
		runtimes(&c.Runtimes),
		hostSilentAfter(&c.HostSilentAfter),
		certifiedMargin(&c.CertifiedMargin),
	}
}

// Flags defines doctor's flags on fs, bound to c's fields.
func (c *DoctorConfig) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.JSON, "json", false, "print the findings as JSON")
	fs.DurationVar(&c.StuckAfter, "stuck-after", doctor.DefaultStuckAfter,
		"how long an instance may stay PENDING, PROVISIONING, STARTING, STOPPING, REBOOTING or DELETING before it is stuck")
}

// RunDoctor connects to the database (and Redis, when configured) and
// returns the doctor's findings.
func RunDoctor(ctx context.Context, c DoctorConfig) ([]doctor.Finding, error) {
	db, err := OpenDB(ctx, c.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	cfg := doctor.Config{DB: db, Prefix: c.RedisPrefix, Runtimes: c.Runtimes, HostSilentAfter: c.HostSilentAfter, StuckAfter: c.StuckAfter,
		CertifiedMargin: c.CertifiedMargin}
	if c.RedisURL != "" {
		rdb, err := OpenRedis(ctx, c.RedisURL)
		if err != nil {
			return nil, err
		}
		defer rdb.Close()
		cfg.Redis = rdb
	}
	if c.Secret != "" {
		sealer, err := seal.New(c.Secret)
		if err != nil {
			return nil, fmt.Errorf("BC_SECRET: %w", err)
		}
		cfg.KeyID = sealer.KeyID()
	}
	return doctor.New(cfg).Run(ctx)
}
