// Package control is the API's domain layer: it authorizes, admits and
// records desired state, each mutation in one Postgres transaction with its
// audit event and outbox row. Nothing here calls a hypervisor or a cloud.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/doctor"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

// Config configures a Service.
type Config struct {
	// Sealer seals user data at rest. Required to create instances.
	Sealer *seal.Sealer
	// Images resolves an instance's image for its tenant. Default: the
	// registered images the tenant owns or that are public.
	Images ImageResolver
	// Logger receives internal errors. Default: slog.Default().
	Logger *slog.Logger
	// HostSilentAfter is how long a host may go without reporting before it
	// counts as silent. Default vps.DefaultHostSilentAfter.
	HostSilentAfter time.Duration
	// Providers are the provider kinds accounts may use, as a deployment
	// lists them. Default: DefaultProviders.
	Providers []string
	// ProviderSettings check a provider account's settings before they are
	// stored, by provider kind: each gets them as they will be stored, a
	// JSON object, and whether the account is an operator's shared one
	// (of no tenant), and returns an *apierr.Error naming the setting at
	// fault (settings.endpoint). The process wiring passes the drivers'
	// own checks and the operator's endpoint policy (app.ProviderSettings):
	// nothing in the API imports a driver. A kind with no check here has
	// its settings stored unchecked.
	ProviderSettings map[string]ProviderSettingsCheck
	// MaxUsageTotals bounds the totals one usage query returns: a query
	// that would return more is INVALID_INPUT (narrow the range or group
	// by less). Default DefaultMaxUsageTotals.
	MaxUsageTotals int
	// Runtimes are the runtimes the deployment runs (BC_RUNTIMES): a hosted
	// pool runs one of them, the first by default. Default
	// vps.DefaultRuntimes().
	Runtimes []string
	// Doctor finds what operators must look at (Service.Doctor). Nil: the
	// doctor is not available.
	Doctor *doctor.Doctor
	// HostCA is the hosts' certificate authority, whose fingerprint a join
	// command pins. Nil: join tokens come without a join command.
	HostCA *hostca.Authority
	// HostURL is the https URL of serve's host listener, as hosts reach it
	// (BC_HOST_URL), for join commands. Empty: no join command.
	HostURL string
	// JoinTokenTTL is how long a host's join token may be used
	// (BC_JOIN_TOKEN_TTL). Default DefaultJoinTokenTTL.
	JoinTokenTTL time.Duration
}

// DefaultMaxUsageTotals is the default Config.MaxUsageTotals.
const DefaultMaxUsageTotals = 50_000

// ProviderSettingsCheck checks the settings of a provider account, a JSON
// object; shared says the account is an operator's shared one.
type ProviderSettingsCheck func(settings json.RawMessage, shared bool) error

// DefaultProviders returns the default Config.Providers: every provider
// kind there is a driver for, which are also the only kinds a deployment
// may allow.
func DefaultProviders() []string { return []string{ProviderHetzner, ProviderProxmox} }

// Service carries out API operations against Postgres.
type Service struct {
	db     *pgxpool.Pool
	q      *sqlc.Queries
	sealer *seal.Sealer
	images ImageResolver
	log    *slog.Logger

	silentAfter      time.Duration
	providers        []string
	providerSettings map[string]ProviderSettingsCheck
	maxUsageTotals   int
	tenantDeleted    tenantDeleted
	runtimes         []string
	doctor           *doctor.Doctor
	hostCA           *hostca.Authority
	hostURL          string
	joinTokenTTL     time.Duration
}

// New returns a Service on db.
func New(db *pgxpool.Pool, cfg Config) *Service {
	if cfg.Images == nil {
		cfg.Images = RegisteredImages{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HostSilentAfter <= 0 {
		cfg.HostSilentAfter = vps.DefaultHostSilentAfter
	}
	if cfg.Providers == nil {
		cfg.Providers = DefaultProviders()
	}
	if cfg.MaxUsageTotals <= 0 {
		cfg.MaxUsageTotals = DefaultMaxUsageTotals
	}
	if len(cfg.Runtimes) == 0 {
		cfg.Runtimes = vps.DefaultRuntimes()
	}
	if cfg.JoinTokenTTL <= 0 {
		cfg.JoinTokenTTL = DefaultJoinTokenTTL
	}
	s := &Service{db: db, q: sqlc.New(db), sealer: cfg.Sealer, images: cfg.Images, log: cfg.Logger,
		silentAfter: cfg.HostSilentAfter, providers: cfg.Providers, providerSettings: cfg.ProviderSettings,
		maxUsageTotals: cfg.MaxUsageTotals, runtimes: cfg.Runtimes, doctor: cfg.Doctor,
		hostCA: cfg.HostCA, hostURL: cfg.HostURL, joinTokenTTL: cfg.JoinTokenTTL}
	s.registerTenantDeleted()
	return s
}

// HostAlive reports whether h reported within the silence timeout.
func (s *Service) HostAlive(h domain.Host) bool {
	return h.LastSeenAt != nil && time.Since(*h.LastSeenAt) < s.silentAfter
}

// mutation is the body of an audited mutation. It runs inside the
// transaction and fills in the audit event's target and tenant once the
// caller is known to be allowed to see them.
type mutation func(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, ev *audit.Event) error

// mutate runs fn in one transaction together with its audit event. A failed
// attempt is rolled back and audited in a transaction of its own.
func (s *Service) mutate(ctx context.Context, action Action, fn mutation) error {
	p := iam.FromContext(ctx)
	if p == nil {
		return apierr.New(apierr.Unauthenticated, "authentication required")
	}
	ev := newEvent(ctx, p, action)
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		if err := fn(ctx, tx, q, &ev); err != nil || ev.Written {
			return err
		}
		return audit.Write(ctx, q, ev)
	})
	if err == nil {
		return nil
	}
	return s.auditFailure(ctx, ev, err)
}

// Reject audits an attempt at action refused before it reached the service,
// such as one naming a malformed ID, and returns err.
func (s *Service) Reject(ctx context.Context, action Action, err error) error {
	p := iam.FromContext(ctx)
	if p == nil {
		return err
	}
	return s.auditFailure(ctx, newEvent(ctx, p, action), err)
}

func newEvent(ctx context.Context, p *iam.Principal, action Action) audit.Event {
	return audit.Event{
		PrincipalID: p.ID,
		TenantID:    p.TenantID,
		Action:      action.Name,
		TargetType:  action.Target,
		RequestID:   audit.RequestID(ctx),
	}
}

// auditFailure records a failed attempt in a transaction of its own.
func (s *Service) auditFailure(ctx context.Context, ev audit.Event, err error) error {
	err = classify(err)
	ev.ErrorCode = string(apierr.CodeOf(err))
	if ev.ErrorCode == string(apierr.Internal) {
		s.log.ErrorContext(ctx, "mutation failed", "action", ev.Action, "request_id", ev.RequestID, "err", err)
	}
	if aerr := audit.Write(context.WithoutCancel(ctx), s.q, ev); aerr != nil {
		s.log.ErrorContext(ctx, "audit failed attempt", "action", ev.Action, "request_id", ev.RequestID, "err", aerr)
	}
	return err
}

// caller returns the authenticated principal of ctx.
func caller(ctx context.Context) (*iam.Principal, error) {
	p := iam.FromContext(ctx)
	if p == nil {
		return nil, apierr.New(apierr.Unauthenticated, "authentication required")
	}
	return p, nil
}

// operator returns the principal of ctx if it is an operator.
func operator(ctx context.Context) (*iam.Principal, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.IsOperator() {
		return nil, apierr.New(apierr.Forbidden, "operators only")
	}
	return p, nil
}

// mapRows maps rows with one of package domain's XFromRow functions.
func mapRows[R, T any](rows []R, fromRow func(R) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out
}

// notFound maps a missing row to NOT_FOUND naming field, and wraps other errors.
func notFound(err error, field, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apierr.NotFoundf(field, "%s not found", what)
	}
	return fmt.Errorf("read %s: %w", what, err)
}

// violates reports whether err is a database error of the named unique or
// foreign key constraint.
func violates(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == constraint
}
