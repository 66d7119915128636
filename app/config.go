package app

import (
	"flag"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/ratelimit"
)

// Config is the configuration of `serve`: read from the environment (Env)
// and flags (Flags), or built in code, where zero fields take their
// defaults.
type Config struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	// Required.
	DatabaseURL string
	// RedisURL is the Redis connection string (REDIS_URL). Required.
	RedisURL string
	// Secret derives the keys that seal user data (BC_SECRET). Required.
	Secret string
	// PreviousSecrets open values sealed before a rotation
	// (BC_SECRET_PREVIOUS, comma-separated). Default: none.
	PreviousSecrets []string
	// BootstrapToken, when set, is made an operator token at start
	// (BC_BOOTSTRAP_TOKEN). Default: none.
	BootstrapToken string
	// AllowedOrigins may open websockets besides the server's own host
	// (BC_ALLOWED_ORIGINS, comma-separated). Default: none.
	AllowedOrigins []string
	// RedisPrefix starts every Redis key and channel (BC_REDIS_PREFIX), so
	// deployments can share a Redis. Default vps.DefaultRedisPrefix.
	RedisPrefix string
	// HostSilentAfter is how long a host may go without reporting before its
	// instances are LOST (BC_HOST_SILENT_AFTER). Default
	// vps.DefaultHostSilentAfter.
	HostSilentAfter time.Duration
	// CertifiedMargin is how soon before its certificate expires a host
	// holding instances is a doctor finding (BC_CERTIFIED_MARGIN); the
	// reconciler beside it places on such a host no longer for a pool
	// requiring certified hosts. Default vps.DefaultCertifiedMargin.
	CertifiedMargin time.Duration
	// LiveBuffer is how many events a subscriber may fall behind before it
	// is dropped (BC_LIVE_BUFFER). Default live.DefaultBuffer.
	LiveBuffer int
	// LiveMaxUnread is how many bytes a websocket client may leave unread
	// before it is closed as a slow consumer (BC_LIVE_MAX_UNREAD). Default
	// graph.DefaultMaxUnread.
	LiveMaxUnread int
	// Providers are the provider kinds accounts may use (BC_PROVIDERS,
	// comma-separated). Default control.DefaultProviders().
	Providers []string
	// Runtimes are the runtimes the deployment's hosted pools run
	// (BC_RUNTIMES, comma-separated), each one of vps.Runtimes; a new
	// hosted pool runs the first unless it names another. Default
	// vps.DefaultRuntimes().
	Runtimes []string
	// ProviderEndpoints is the operator's policy on where provider accounts
	// may send requests: Hosts, the hosts tenants' accounts may name
	// (BC_PROVIDER_ENDPOINTS, comma-separated; default
	// DefaultProviderEndpoints()), and AllowPrivate, whether any account
	// may reach a loopback, link-local or private address
	// (BC_PROVIDER_ALLOW_PRIVATE; default false, in dev true).
	ProviderEndpoints cloud.Endpoints
	// MaxConnections is how many websockets one principal may hold
	// (BC_WS_MAX_CONNECTIONS). Default graph.DefaultMaxConnections.
	MaxConnections int
	// RateLimits are each role's rates of queries and of mutations, per
	// principal across every serve (BC_RATE_LIMIT_MEMBER_QUERIES,
	// BC_RATE_LIMIT_MEMBER_MUTATIONS, BC_RATE_LIMIT_OPERATOR_QUERIES,
	// BC_RATE_LIMIT_OPERATOR_MUTATIONS). Default: ratelimit's defaults.
	RateLimits ratelimit.Rates
	// GraphQL bounds the work one GraphQL request may cause: the body read
	// (BC_GRAPHQL_MAX_BODY), a document's tokens, selections and depth
	// (BC_GRAPHQL_MAX_TOKENS, BC_GRAPHQL_MAX_SELECTIONS,
	// BC_GRAPHQL_MAX_DEPTH) and the time parsing and validating it may take
	// (BC_GRAPHQL_DOCUMENT_TIMEOUT). Defaults: graph.Limits.WithDefaults.
	GraphQL graph.Limits
	// SandboxStatsInterval is how often the latest CPU and memory use hosts
	// reported of each sandbox is written (BC_SANDBOX_STATS_INTERVAL).
	// Default control.DefaultStatsInterval.
	SandboxStatsInterval time.Duration
	// SandboxStatsKeep is how long a sandbox's stats are kept after it
	// ended (BC_SANDBOX_STATS_KEEP). Default control.DefaultStatsKeep.
	SandboxStatsKeep time.Duration
	// Listen is the HTTP address (--listen). Default DefaultListen.
	Listen string
	// HostListen is the address of the TLS listener for hosts: mutual TLS
	// by host certificate, joining and renewing (BC_HOST_LISTEN, such as
	// :8443). Default: none, hosts use Listen with their bearer credential.
	HostListen string
	// HostTLSNames are the DNS names and IP addresses of the host
	// listener's certificate (BC_HOST_TLS_NAMES, comma-separated). Default
	// DefaultHostTLSNames().
	HostTLSNames []string
	// HostURL is the https URL hosts reach the host listener at, for join
	// commands (BC_HOST_URL). Default https://<first of HostTLSNames>:<port
	// of HostListen>.
	HostURL string
	// HostCertValidity is how long a host certificate is valid
	// (BC_HOST_CERT_VALIDITY); hosts renew at two thirds of it. Default
	// hostca.DefaultValidity.
	HostCertValidity time.Duration
	// JoinTokenTTL is how long a host's join token may be used
	// (BC_JOIN_TOKEN_TTL). Default control.DefaultJoinTokenTTL.
	JoinTokenTTL time.Duration
	// Profiles serves the Go runtime's profiles at /debug/pprof/ beside
	// /metrics (BC_PPROF). Default off.
	Profiles bool
	// LogLevel is the least level logged (--log-level, BC_LOG_LEVEL).
	// Default slog.LevelInfo.
	LogLevel slog.Level
	// Logger is the process log. Default: JSON to stderr.
	Logger *slog.Logger
}

// DefaultListen is the default HTTP address of serve and dev.
const DefaultListen = "127.0.0.1:8080"

// Env returns the environment variables serve reads, bound to c's fields:
// the table both conf.Read and --help use.
func (c *Config) Env() []conf.Var {
	return []conf.Var{
		required(databaseURL(&c.DatabaseURL)),
		required(redisURL(&c.RedisURL)),
		required(secret(&c.Secret)),
		previousSecrets(&c.PreviousSecrets),
		conf.String(&c.BootstrapToken, "BC_BOOTSTRAP_TOKEN", "",
			"made an operator token at start, for a fresh deployment (16+ characters)"),
		conf.List(&c.AllowedOrigins, "BC_ALLOWED_ORIGINS", nil,
			"comma-separated browser origins that may open websockets besides the server's own host"),
		redisPrefix(&c.RedisPrefix),
		hostSilentAfter(&c.HostSilentAfter),
		certifiedMargin(&c.CertifiedMargin),
		conf.Int(&c.LiveBuffer, "BC_LIVE_BUFFER", live.DefaultBuffer,
			"events a subscription may fall behind before it is closed"),
		conf.Int(&c.LiveMaxUnread, "BC_LIVE_MAX_UNREAD", graph.DefaultMaxUnread,
			"bytes a websocket client may leave unread before it is closed as a slow consumer"),
		conf.Int(&c.MaxConnections, "BC_WS_MAX_CONNECTIONS", graph.DefaultMaxConnections,
			"websockets one principal may hold"),
		conf.Int(&c.GraphQL.MaxBody, "BC_GRAPHQL_MAX_BODY", graph.DefaultMaxBody,
			"bytes of the largest GraphQL request body read; a larger one is refused with 413"),
		conf.Int(&c.GraphQL.MaxTokens, "BC_GRAPHQL_MAX_TOKENS", graph.DefaultMaxTokens,
			"lexical tokens a GraphQL document may have"),
		conf.Int(&c.GraphQL.MaxSelections, "BC_GRAPHQL_MAX_SELECTIONS", graph.DefaultMaxSelections,
			"fields a GraphQL document may select, a fragment's counted at each spread"),
		conf.Int(&c.GraphQL.MaxDepth, "BC_GRAPHQL_MAX_DEPTH", graph.DefaultMaxDepth,
			"how deep a GraphQL document's fields may nest"),
		conf.Duration(&c.GraphQL.DocumentTimeout, "BC_GRAPHQL_DOCUMENT_TIMEOUT", graph.DefaultDocumentTimeout,
			"how long parsing and validating one GraphQL document may take"),
		providers(&c.Providers),
		runtimes(&c.Runtimes),
		rateLimit(&c.RateLimits.MemberQueries, "BC_RATE_LIMIT_MEMBER_QUERIES", ratelimit.DefaultMemberQueries,
			"a member's queries and subscription starts"),
		rateLimit(&c.RateLimits.MemberMutations, "BC_RATE_LIMIT_MEMBER_MUTATIONS", ratelimit.DefaultMemberMutations,
			"a member's mutations"),
		rateLimit(&c.RateLimits.OperatorQueries, "BC_RATE_LIMIT_OPERATOR_QUERIES", ratelimit.DefaultOperatorQueries,
			"an operator's queries and subscription starts"),
		rateLimit(&c.RateLimits.OperatorMutations, "BC_RATE_LIMIT_OPERATOR_MUTATIONS", ratelimit.DefaultOperatorMutations,
			"an operator's mutations"),
		providerEndpoints(&c.ProviderEndpoints.Hosts),
		providerAllowPrivate(&c.ProviderEndpoints.AllowPrivate, false),
		conf.Duration(&c.SandboxStatsInterval, "BC_SANDBOX_STATS_INTERVAL", control.DefaultStatsInterval,
			"how often the latest CPU and memory use hosts report of each sandbox is written"),
		conf.Duration(&c.SandboxStatsKeep, "BC_SANDBOX_STATS_KEEP", control.DefaultStatsKeep,
			"how long a sandbox's CPU and memory use is kept after it ended"),
		conf.String(&c.HostListen, "BC_HOST_LISTEN", "",
			"address of the TLS listener for hosts (mutual TLS by host certificate, join, renew), such as :8443; empty: none"),
		conf.List(&c.HostTLSNames, "BC_HOST_TLS_NAMES", DefaultHostTLSNames(),
			"comma-separated DNS names and IP addresses of the host listener's certificate"),
		hostURL(&c.HostURL, "https URL hosts reach the host listener at, for join commands and provider bootstraps' join scripts; empty: https://<first TLS name>:<port of BC_HOST_LISTEN>"),
		conf.Duration(&c.HostCertValidity, "BC_HOST_CERT_VALIDITY", hostca.DefaultValidity,
			"how long a host certificate is valid; hosts renew at two thirds of it"),
		conf.Duration(&c.JoinTokenTTL, "BC_JOIN_TOKEN_TTL", control.DefaultJoinTokenTTL,
			"how long a host's one-time join token may be used"),
		profiles(&c.Profiles),
		logLevel(&c.LogLevel),
	}
}

// DefaultHostTLSNames are the names of the host listener's certificate by
// default: the machine's hostname, localhost and the loopback addresses.
func DefaultHostTLSNames() []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		names = append([]string{h}, names...)
	}
	return names
}

// rateLimit declares a rate of one role and class of operations, per
// principal.
func rateLimit(p *ratelimit.Rate, name string, value ratelimit.Rate, what string) conf.Var {
	return conf.Func(name, value.String(),
		"rate of "+what+" per principal, across every serve: N/s, N/m or N/h, then :burst (RATE_LIMITED past it), or off",
		func(s string) error {
			r, err := ratelimit.ParseRate(s)
			if err != nil {
				return err
			}
			*p = r
			return nil
		})
}

// Flags defines serve's flags on fs, bound to c's fields.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "HTTP `address` to listen on")
	logLevelFlag(fs, &c.LogLevel)
}

func (c *Config) applyDefaults() {
	if c.RedisPrefix == "" {
		c.RedisPrefix = vps.DefaultRedisPrefix
	}
	if c.HostSilentAfter <= 0 {
		c.HostSilentAfter = vps.DefaultHostSilentAfter
	}
	if c.CertifiedMargin <= 0 {
		c.CertifiedMargin = vps.DefaultCertifiedMargin
	}
	if c.LiveBuffer <= 0 {
		c.LiveBuffer = live.DefaultBuffer
	}
	if c.SandboxStatsInterval <= 0 {
		c.SandboxStatsInterval = control.DefaultStatsInterval
	}
	if c.SandboxStatsKeep <= 0 {
		c.SandboxStatsKeep = control.DefaultStatsKeep
	}
	if c.LiveMaxUnread <= 0 {
		c.LiveMaxUnread = graph.DefaultMaxUnread
	}
	if c.Providers == nil {
		c.Providers = control.DefaultProviders()
	}
	if len(c.Runtimes) == 0 {
		c.Runtimes = vps.DefaultRuntimes()
	}
	if c.ProviderEndpoints.Hosts == nil {
		c.ProviderEndpoints.Hosts = DefaultProviderEndpoints()
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = graph.DefaultMaxConnections
	}
	c.RateLimits = c.RateLimits.WithDefaults()
	c.GraphQL = c.GraphQL.WithDefaults()
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if len(c.HostTLSNames) == 0 {
		c.HostTLSNames = DefaultHostTLSNames()
	}
	if c.HostURL == "" && c.HostListen != "" {
		_, port, _ := net.SplitHostPort(c.HostListen)
		c.HostURL = "https://" + net.JoinHostPort(c.HostTLSNames[0], port)
	}
	if c.HostCertValidity <= 0 {
		c.HostCertValidity = hostca.DefaultValidity
	}
	if c.JoinTokenTTL <= 0 {
		c.JoinTokenTTL = control.DefaultJoinTokenTTL
	}
	if c.Logger == nil {
		c.Logger = NewLogger(c.LogLevel)
	}
}
