package graph

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/graph/generated"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/ratelimit"
	"github.com/better-compute/vps/sqlc"
)

// HandlerConfig configures the GraphQL endpoint.
type HandlerConfig struct {
	// Service carries out operations. Required.
	Service *control.Service
	// DB authenticates tokens. Required.
	DB *pgxpool.Pool
	// Logger logs internal errors. Required.
	Logger *slog.Logger
	// AllowedOrigins may open websockets besides the server's own host.
	AllowedOrigins []string
	// Observe, if set, is told of every answered operation.
	Observe func(opType, outcome string, took time.Duration)
	// Live fans out instance events to subscriptions. Without it,
	// subscriptions are refused.
	Live *live.Hub
	// MaxConnections is how many websockets one principal may hold.
	// Default DefaultMaxConnections.
	MaxConnections int
	// MaxSubscriptions is how many subscriptions one websocket may carry.
	// Default DefaultMaxSubscriptions.
	MaxSubscriptions int
	// MaxUnread is how many bytes a websocket client may leave unread on
	// its connection before it is closed as a slow consumer. Default
	// DefaultMaxUnread.
	MaxUnread int
	// WriteTimeout is how long one write to a websocket client may take
	// before it is closed as a slow consumer. Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// PingInterval is how often a graphql-transport-ws client is pinged;
	// one that leaves two pings unanswered is closed at the next. Default
	// DefaultPingInterval.
	PingInterval time.Duration
	// RateLimit, if set, bounds each principal's operations (subscription
	// starts included); those over it are refused as RATE_LIMITED, over
	// HTTP with 429 and Retry-After. Without it nothing is limited.
	RateLimit *ratelimit.Limiter
	// Limits bound the work one request may cause before it is refused.
	Limits Limits
}

// Limits bound what one request may make the server do before it runs:
// the body it reads and the document it parses and validates. Zero fields
// take their defaults.
type Limits struct {
	// MaxBody is the size in bytes of the largest request body read.
	// Default DefaultMaxBody.
	MaxBody int
	// MaxTokens is how many lexical tokens a document may have. Default
	// DefaultMaxTokens.
	MaxTokens int
	// MaxSelections is how many fields a document may select, counting a
	// fragment's once for every spread of it. Default DefaultMaxSelections.
	MaxSelections int
	// MaxDepth is how deep a document's fields may nest, through
	// fragments too. Default DefaultMaxDepth.
	MaxDepth int
	// DocumentTimeout is how long parsing and validating one document may
	// take before the work is stopped. Default DefaultDocumentTimeout.
	DocumentTimeout time.Duration
}

// Defaults of HandlerConfig.
const (
	// DefaultMaxConnections is how many websockets one principal may hold.
	DefaultMaxConnections = 100
	// DefaultMaxSubscriptions is how many subscriptions one websocket may
	// carry.
	DefaultMaxSubscriptions = 50
	// DefaultMaxUnread is how many bytes (1 MiB) a websocket client may
	// leave unread before it is closed as a slow consumer.
	DefaultMaxUnread = 1 << 20
	// DefaultWriteTimeout is how long one write to a websocket client may
	// take before it is closed as a slow consumer.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultPingInterval is how often a graphql-transport-ws client is
	// pinged.
	DefaultPingInterval = 15 * time.Second
	// DefaultMaxBody is the largest request body read (1 MiB).
	DefaultMaxBody = 1 << 20
	// DefaultMaxTokens is how many lexical tokens a document may have.
	DefaultMaxTokens = 10_000
	// DefaultMaxSelections is how many fields a document may select. The
	// console's queries select a few dozen, GraphiQL's introspection query
	// 226.
	DefaultMaxSelections = 500
	// DefaultMaxDepth is how deep a document's fields may nest. The
	// console's queries nest at most 4 deep, GraphiQL's introspection
	// query 15.
	DefaultMaxDepth = 20
	// DefaultDocumentTimeout is how long parsing and validating one
	// document may take.
	DefaultDocumentTimeout = time.Second
	// maxComplexity is gqlgen's complexity limit: with a field costing 1,
	// DefaultMaxSelections keeps documents under it.
	maxComplexity = 2000
)

func (cfg *HandlerConfig) applyDefaults() {
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxSubscriptions <= 0 {
		cfg.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if cfg.MaxUnread <= 0 {
		cfg.MaxUnread = DefaultMaxUnread
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	cfg.Limits = cfg.Limits.WithDefaults()
}

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultMaxTokens
	}
	if l.MaxSelections <= 0 {
		l.MaxSelections = DefaultMaxSelections
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.DocumentTimeout <= 0 {
		l.DocumentTimeout = DefaultDocumentTimeout
	}
	return l
}

// Handler is the /graphql endpoint.
type Handler struct {
	http.Handler
	q     *sqlc.Queries
	conns *conns
}

// Run ends, until ctx ends, the websockets whose token was revoked or
// expired; it checks every few seconds.
func (h *Handler) Run(ctx context.Context) {
	h.conns.endRevoked(ctx, h.q, revocationCheck)
}

// revocationCheck is how often websockets' tokens are checked.
const revocationCheck = 3 * time.Second

// NewHandler returns the /graphql endpoint: POST, GET and websocket, with
// bearer-token authentication on all three.
func NewHandler(cfg HandlerConfig) *Handler {
	cfg.applyDefaults()
	q := sqlc.New(cfg.DB)
	cs := &conns{max: cfg.MaxConnections}
	res := &Resolver{svc: cfg.Service, live: cfg.Live, maxSubs: cfg.MaxSubscriptions}
	es := generated.NewExecutableSchema(generated.Config{Resolvers: res})
	srv := handler.New(es)
	if cfg.Live != nil {
		res.fan = newFanout(es, cfg.Service, cfg.Live, cfg.Logger)
	}
	accept := acceptor{
		options:      websocket.AcceptOptions{OriginPatterns: cfg.AllowedOrigins},
		maxUnread:    cfg.MaxUnread,
		writeTimeout: cfg.WriteTimeout,
		pingInterval: cfg.PingInterval,
	}
	if cfg.Live != nil {
		accept.onSlow = cfg.Live.ClientSlow
	}
	maxPayload := int64(cfg.Limits.MaxBody)
	srv.AddTransport(transport.Websocket{
		Implementation:   accept,
		PayloadReadLimit: &maxPayload,
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			refuse := func(code int, reason string) (context.Context, *transport.InitPayload, error) {
				return transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, code), reason), nil, errors.New(reason)
			}
			p, err := iam.Authenticate(ctx, q, iam.BearerToken(payload.Authorization()))
			if err != nil {
				return refuse(closeUnauthorized, "unauthenticated: the token is missing, unknown, revoked or expired")
			}
			c := connFrom(ctx)
			c.principal = p
			if err := cs.add(c); err != nil {
				return refuse(closeTooManyRequests, err.Error())
			}
			if cfg.Live != nil {
				cfg.Live.ClientConnected()
			}
			if !p.ExpiresAt.IsZero() {
				// The connection ends when its token expires.
				expire := time.AfterFunc(time.Until(p.ExpiresAt), func() { c.close(closeUnauthorized, "token expired") })
				context.AfterFunc(ctx, func() { expire.Stop() })
			}
			// The ack carries nothing: the payload holds the token.
			return withLoaders(iam.WithPrincipal(ctx, p), cfg.Service), nil, nil
		},
		CloseFunc: func(ctx context.Context, _ int) {
			if c := connFrom(ctx); c != nil && c.principal != nil {
				cs.remove(c)
				if cfg.Live != nil {
					cfg.Live.ClientGone()
				}
			}
		},
		InitTimeout: 10 * time.Second,
		// graphql-ws's keep-alive; graphql-transport-ws's pings are the
		// acceptor's (pinger).
		KeepAlivePingInterval: 15 * time.Second,
	})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(handoff{})
	srv.Use(newDocuments(es.Schema(), cfg.Limits, cfg.Logger))
	srv.Use(operationIDs{})
	srv.Use(extension.Introspection{})
	srv.Use(complexityLimit{extension.FixedComplexityLimit(maxComplexity)})
	srv.SetErrorPresenter(presenter(cfg.Logger))
	srv.SetRecoverFunc(func(ctx context.Context, v any) error {
		cfg.Logger.ErrorContext(ctx, "resolver panic", "request_id", audit.RequestID(ctx), "panic", v)
		return apierr.New(apierr.Internal, "internal error")
	})
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		p := iam.FromContext(ctx)
		if p == nil {
			return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{toGQL(errUnauthenticated, nil)}})
		}
		if refused := limitOperation(ctx, cfg.RateLimit, p); refused != nil {
			return graphql.OneShot(refused)
		}
		if err := checkInputs(ctx, es.Schema()); err != nil {
			var apiErr *apierr.Error
			errors.As(err, &apiErr)
			return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{toGQL(apiErr, nil)}})
		}
		if methodFrom(ctx) == "" { // a websocket's: its resolver may join a group
			ctx = withSlot(ctx)
		}
		return next(ctx)
	})
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		start := time.Now()
		opType := operationType(ctx)
		var resp *graphql.Response
		if s := slotFrom(ctx); s != nil && s.m != nil {
			// A shared response is clean already; the member writes
			// the ones it can itself.
			resp = s.m.respond(ctx, next, func(written *graphql.Response) {
				observe(cfg.Observe, opType, written, start)
				start = time.Now()
			})
		} else if resp = next(ctx); resp != nil {
			clean(resp.Errors)
		}
		observe(cfg.Observe, opType, resp, start)
		return resp
	})
	g := &gate{q: q, svc: cfg.Service, log: cfg.Logger, maxBody: cfg.Limits.MaxBody, origins: cfg.AllowedOrigins, next: srv}
	return &Handler{Handler: g, q: q, conns: cs}
}

// operationType is the type of ctx's operation: "query", "mutation",
// "subscription" or "unknown". A subscription's member asks once, not at
// each of its events: the lookup walks the request's whole context.
func operationType(ctx context.Context) string {
	if graphql.HasOperationContext(ctx) {
		if op := graphql.GetOperationContext(ctx).Operation; op != nil {
			return string(op.Operation)
		}
	}
	return "unknown"
}

// observe tells o, if set, of an operation's response.
func observe(o func(opType, outcome string, took time.Duration), opType string, resp *graphql.Response, start time.Time) {
	if o == nil || resp == nil {
		return
	}
	outcome := "ok"
	if len(resp.Errors) > 0 {
		outcome, _ = resp.Errors[0].Extensions["code"].(string)
	}
	o(opType, outcome, time.Since(start))
}

// presenter shows API errors as they are and hides everything else behind
// INTERNAL, logging it with the request's path and id. An INTERNAL error
// carries the request id (extensions.requestId), so what a client reports
// finds the log line.
func presenter(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var gqlErr *gqlerror.Error
		if errors.As(err, &gqlErr) && gqlErr.Err == nil {
			return gqlErr // parse and validation errors; codes normalized later
		}
		path := graphql.GetPath(ctx)
		var apiErr *apierr.Error
		if errors.As(err, &apiErr) && apiErr.Code != apierr.Internal {
			return toGQL(apiErr, path)
		}
		if apiErr == nil { // an *apierr.Error of code INTERNAL was logged where it was made
			log.ErrorContext(ctx, "internal error", "request_id", audit.RequestID(ctx), "path", path.String(), "err", err)
		}
		return internalError(audit.RequestID(ctx), path)
	}
}

// internalError is the INTERNAL error the client sees: no details, but the
// request id the server logged them under.
func internalError(requestID string, path ast.Path) *gqlerror.Error {
	e := toGQL(apierr.New(apierr.Internal, "internal error"), path)
	if requestID != "" {
		e.Extensions["requestId"] = requestID
	}
	return e
}

func toGQL(e *apierr.Error, path ast.Path) *gqlerror.Error {
	ext := map[string]any{"code": string(e.Code)}
	if e.Field != "" {
		ext["field"] = e.Field
	}
	if e.Limit != "" {
		ext["limit"] = e.Limit
	}
	if e.Code == apierr.RateLimited && e.RetryAfter > 0 {
		ext["retryAfter"] = retryAfterSeconds(e.RetryAfter)
	}
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	return &gqlerror.Error{Message: msg, Path: path, Extensions: ext}
}

// maxMessage is the longest error message shown, in bytes.
const maxMessage = 240

// clean gives every error a code from the API's set and a message fit to
// show: gqlgen's own errors (a body that is not JSON, parse and validation
// errors) are INVALID_INPUT, and no message echoes the request or runs past
// maxMessage bytes.
func clean(errs gqlerror.List) {
	for _, e := range errs {
		code, _ := e.Extensions["code"].(string)
		if !apierr.Code(code).Documented() {
			if e.Extensions == nil {
				e.Extensions = map[string]any{}
			}
			e.Extensions["code"] = string(apierr.InvalidInput)
		}
		if strings.HasPrefix(e.Message, "json request body could not be decoded") {
			// gqlgen's message has the decoder's error, naming Go types, and the body.
			e.Message = "the body is not a GraphQL request: a JSON object with a query string"
		}
		e.Message = truncate(e.Message, maxMessage)
	}
}

// truncate cuts s to at most n bytes, at a character boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// complexityLimit is gqlgen's complexity limit, its refusal in the API's
// codes: it reaches websocket clients without passing clean.
type complexityLimit struct{ *extension.ComplexityLimit }

func (c complexityLimit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if err := c.ComplexityLimit.MutateOperationContext(ctx, opCtx); err != nil {
		return toGQL(refused("complexity", "the operation's complexity is over %d", maxComplexity), nil)
	}
	return nil
}
