package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

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
	// RateLimit, if set, bounds each principal's operations (subscription
	// starts included); those over it are refused as RATE_LIMITED, over
	// HTTP with 429 and Retry-After. Without it nothing is limited.
	RateLimit *ratelimit.Limiter
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

// NewHandler returns the /graphql endpoint: POST and websocket, with
// bearer-token authentication on both.
func NewHandler(cfg HandlerConfig) *Handler {
	cfg.applyDefaults()
	q := sqlc.New(cfg.DB)
	cs := &conns{max: cfg.MaxConnections}
	schema := generated.NewExecutableSchema(generated.Config{Resolvers: &Resolver{svc: cfg.Service, live: cfg.Live, maxSubs: cfg.MaxSubscriptions}})
	srv := handler.New(schema)
	accept := acceptor{
		CoderWebsocketImplementation: transport.CoderWebsocketImplementation{AcceptOptions: websocket.AcceptOptions{OriginPatterns: cfg.AllowedOrigins}},
		maxUnread:                    cfg.MaxUnread,
		writeTimeout:                 cfg.WriteTimeout,
	}
	if cfg.Live != nil {
		accept.onSlow = cfg.Live.ClientSlow
	}
	srv.AddTransport(transport.Websocket{
		Implementation: accept,
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			refuse := func(code int, reason string) (context.Context, *transport.InitPayload, error) {
				return transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, code), reason), nil, errors.New(reason)
			}
			p, err := iam.Authenticate(ctx, q, iam.BearerToken(payload.Authorization()))
			if err != nil {
				// 4403 Forbidden is graphql-transport-ws's answer to a refused init.
				return refuse(closeForbidden, "unauthenticated")
			}
			if c := connFrom(ctx); c != nil {
				c.principal = p
				if err := cs.add(c); err != nil {
					return refuse(closeTooManyRequests, err.Error())
				}
				if cfg.Live != nil {
					cfg.Live.ClientConnected()
				}
			}
			ctx = withLoaders(iam.WithPrincipal(ctx, p), cfg.Service)
			if !p.ExpiresAt.IsZero() {
				// The connection ends when its token expires.
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, p.ExpiresAt)
				context.AfterFunc(ctx, cancel)
			}
			return ctx, &payload, nil
		},
		CloseFunc: func(ctx context.Context, _ int) {
			if c := connFrom(ctx); c != nil && c.principal != nil {
				cs.remove(c)
				if cfg.Live != nil {
					cfg.Live.ClientGone()
				}
			}
		},
		InitTimeout:           10 * time.Second,
		KeepAlivePingInterval: 15 * time.Second,
		PingPongInterval:      15 * time.Second,
	})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.Use(extension.Introspection{})
	srv.Use(extension.FixedComplexityLimit(2000))
	srv.SetErrorPresenter(presenter(cfg.Logger))
	srv.SetRecoverFunc(func(ctx context.Context, v any) error {
		cfg.Logger.ErrorContext(ctx, "resolver panic", "request_id", audit.RequestID(ctx), "panic", v)
		return apierr.New(apierr.Internal, "internal error")
	})
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		p := iam.FromContext(ctx)
		if p == nil {
			return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{toGQL(apierr.New(apierr.Unauthenticated, "a valid bearer token is required"), nil)}})
		}
		if refused := limitOperation(ctx, cfg.RateLimit, p); refused != nil {
			return graphql.OneShot(refused)
		}
		if err := checkInputs(ctx, schema.Schema()); err != nil {
			var apiErr *apierr.Error
			errors.As(err, &apiErr)
			return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{toGQL(apiErr, nil)}})
		}
		return next(ctx)
	})
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		start := time.Now()
		resp := next(ctx)
		if resp != nil {
			normalizeCodes(resp.Errors)
		}
		if cfg.Observe != nil && resp != nil {
			opType := "unknown"
			if graphql.HasOperationContext(ctx) {
				if op := graphql.GetOperationContext(ctx).Operation; op != nil {
					opType = string(op.Operation)
				}
			}
			outcome := "ok"
			if len(resp.Errors) > 0 {
				outcome, _ = resp.Errors[0].Extensions["code"].(string)
			}
			cfg.Observe(opType, outcome, time.Since(start))
		}
		return resp
	})
	return &Handler{Handler: supported(authenticate(q, cfg.Service, cfg.Logger, srv)), q: q, conns: cs}
}

// supported answers requests no transport serves (another method, a POST
// that is not JSON) with an error in the API's shape.
func supported(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		websocket := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
		json := r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
		if websocket {
			r = withConn(r)
		} else {
			w, r = withRefusals(w, r)
		}
		if !websocket && !json && r.Method != http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"errors":[{"message":"send a POST with Content-Type: application/json, a GET, or a websocket upgrade","extensions":{"code":"INVALID_INPUT"}}]}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate puts the principal of the request's bearer token, if any, and
// fresh loaders into its context. Operations without a principal are refused.
func authenticate(q *sqlc.Queries, svc *control.Service, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := withLoaders(r.Context(), svc)
		if token := iam.BearerToken(r.Header.Get("Authorization")); token != "" {
			p, err := iam.Authenticate(ctx, q, token)
			if err != nil && !errors.Is(err, iam.ErrUnauthenticated) {
				id := audit.RequestID(ctx)
				log.ErrorContext(ctx, "internal error", "request_id", id, "during", "authentication", "err", err)
				body, _ := json.Marshal(map[string]any{"errors": gqlerror.List{internalError(id, nil)}})
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				w.Write(body)
				return
			}
			if p != nil {
				ctx = iam.WithPrincipal(ctx, p)
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
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

// normalizeCodes gives gqlgen's own errors (parse, validation, unknown
// fields) a code from the API's set.
func normalizeCodes(errs gqlerror.List) {
	for _, e := range errs {
		code, _ := e.Extensions["code"].(string)
		switch {
		case code == "": // the transport's own, such as a body that is not JSON
			if e.Extensions == nil {
				e.Extensions = map[string]any{}
			}
			e.Extensions["code"] = string(apierr.InvalidInput)
		case strings.HasPrefix(code, "GRAPHQL_"):
			e.Extensions["code"] = string(apierr.InvalidInput)
		}
	}
}
