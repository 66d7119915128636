// Package doctor finds what an operator must look at: misconfigured pools
// and hosts, resources leaked by deleted instances, stuck work and stale
// secrets. The doctor command, the GraphQL doctor query and the console's
// doctor page all read Run.
package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// Level is how bad a finding is.
type Level string

// The levels. The doctor command exits 1 on any LevelError finding.
const (
	// LevelError: something is broken or leaking; fix it.
	LevelError Level = "error"
	// LevelWarning: something needs a look or will go wrong later.
	LevelWarning Level = "warning"
)

// Finding is one situation the doctor found.
type Finding struct {
	// Code names the kind of finding, such as vps.pools.ipam.
	Code  string `json:"code"`
	Level Level  `json:"level"`
	// Objects are the API IDs of the objects it is about (pool_…, ins_…).
	Objects []string `json:"objects"`
	// Message says what is wrong; Remedy what to do.
	Message string `json:"message"`
	Remedy  string `json:"remedy"`
}

// Config configures the doctor.
type Config struct {
	// DB is the database. Required.
	DB *pgxpool.Pool
	// Redis holds the work stream's dead letters. Nil: not checked.
	Redis redis.UniversalClient
	// Prefix starts every Redis key. Default vps.DefaultRedisPrefix.
	Prefix string
	// Runtimes are the runtimes the deployment runs (BC_RUNTIMES).
	// Default vps.DefaultRuntimes().
	Runtimes []string
	// HostSilentAfter is how long a host may go without reporting before it
	// is silent. Default vps.DefaultHostSilentAfter.
	HostSilentAfter time.Duration
	// StuckAfter is how long an instance may stay in a transitional state
	// (PENDING, PROVISIONING, STARTING, STOPPING, REBOOTING, DELETING)
	// before it is stuck. Default DefaultStuckAfter.
	StuckAfter time.Duration
	// KeyID names the current sealing key (seal.Sealer.KeyID). Nil: values
	// sealed under another are not looked for.
	KeyID []byte
	// CertifiedMargin is how soon before its certificate expires a host
	// holding instances is reported (BC_CERTIFIED_MARGIN). Default
	// vps.DefaultCertifiedMargin.
	CertifiedMargin time.Duration
}

// DefaultStuckAfter is the default Config.StuckAfter.
const DefaultStuckAfter = 15 * time.Minute

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = vps.DefaultRedisPrefix
	}
	if len(c.Runtimes) == 0 {
		c.Runtimes = vps.DefaultRuntimes()
	}
	if c.HostSilentAfter <= 0 {
		c.HostSilentAfter = vps.DefaultHostSilentAfter
	}
	if c.StuckAfter <= 0 {
		c.StuckAfter = DefaultStuckAfter
	}
	if c.CertifiedMargin <= 0 {
		c.CertifiedMargin = vps.DefaultCertifiedMargin
	}
	return c
}

// Doctor runs the checks.
type Doctor struct {
	cfg Config
	q   *sqlc.Queries
	// lookup finds a runtime's properties by name: vps.LookupRuntime.
	lookup func(name string) (vps.Runtime, bool)
}

// New returns a Doctor.
func New(cfg Config) *Doctor {
	return &Doctor{cfg: cfg.withDefaults(), q: sqlc.New(cfg.DB), lookup: vps.LookupRuntime}
}

// check finds the findings of one kind of situation.
type check struct {
	name string
	run  func(ctx context.Context, d *Doctor) ([]Finding, error)
}

// checks are every check, in the order their findings are listed.
var checks = []check{
	{"pools", checkPools},
	{"host capacity", checkCapacity},
	{"silent hosts", checkSilentHosts},
	{"host certificates", checkCertificates},
	{"unhealthy GPUs", checkGPUs},
	{"held by deleted instances", checkHeld},
	{"stuck instances", checkStuck},
	{"dead letters", checkDeadLetters},
	{"provider orphans", checkOrphans},
	{"stale sealed values", checkSealed},
}

// Run runs every check and returns their findings, errors first.
func (d *Doctor) Run(ctx context.Context) ([]Finding, error) {
	var out []Finding
	for _, c := range checks {
		found, err := c.run(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("doctor: %s: %w", c.name, err)
		}
		out = append(out, found...)
	}
	errs := make([]Finding, 0, len(out))
	var warns []Finding
	for _, f := range out {
		if f.Level == LevelError {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	return append(errs, warns...), nil
}

// Errors counts the findings of LevelError.
func Errors(findings []Finding) int {
	n := 0
	for _, f := range findings {
		if f.Level == LevelError {
			n++
		}
	}
	return n
}
