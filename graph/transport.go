package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/sqlc"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// gate is what a request meets before gqlgen's transports: it answers, with
// a coded error and without reading the body, what they would answer badly
// or at a cost. A websocket from another origin is refused; an HTTP request
// must be a JSON POST or a GET, carry a valid bearer token (websockets
// authenticate in connection_init), and have a body of at most maxBody
// bytes, which gate reads itself so that no transport reads more.
type gate struct {
	q       *sqlc.Queries
	svc     *control.Service
	log     *slog.Logger
	maxBody int
	origins []string
	next    http.Handler
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := withLoaders(r.Context(), g.svc)
	if upgrade := r.Header.Get("Upgrade"); upgrade != "" {
		if !strings.EqualFold(upgrade, "websocket") {
			writeError(w, http.StatusBadRequest, apierr.New(apierr.InvalidInput, "the only upgrade served is to a websocket"))
			return
		}
		if err := checkOrigin(r, g.origins); err != nil {
			g.log.WarnContext(ctx, "websocket origin refused", "origin", r.Header.Get("Origin"), "host", r.Host, "request_id", audit.RequestID(ctx))
			writeError(w, http.StatusForbidden, apierr.New(apierr.Forbidden, "websockets from this origin are not allowed"))
			return
		}
		g.next.ServeHTTP(w, withConn(r.WithContext(ctx)))
		return
	}
	if status, err := unsupported(r); err != nil {
		writeError(w, status, err)
		return
	}
	if r.ContentLength > int64(g.maxBody) {
		g.refuse(ctx, w, r, "body", http.StatusRequestEntityTooLarge, g.bodyTooLarge())
		return
	}
	p, err := iam.Authenticate(ctx, g.q, iam.BearerToken(r.Header.Get("Authorization")))
	switch {
	case errors.Is(err, iam.ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", "Bearer")
		g.refuse(ctx, w, r, "unauthenticated", http.StatusUnauthorized, errUnauthenticated)
		return
	case err != nil:
		id := audit.RequestID(ctx)
		g.log.ErrorContext(ctx, "internal error", "request_id", id, "during", "authentication", "err", err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(map[string]any{"errors": gqlerror.List{internalError(id, nil)}})
		return
	}
	ctx = withMethod(iam.WithPrincipal(ctx, p), r.Method)
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, UsageCSVPath) {
		g.usageCSV(w, r.WithContext(ctx))
		return
	}
	w, ctx = withRefusals(w, ctx)
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(g.maxBody)))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			g.refuse(ctx, w, r, "body", http.StatusRequestEntityTooLarge, g.bodyTooLarge())
			return
		case err != nil:
			writeError(w, http.StatusBadRequest, apierr.New(apierr.InvalidInput, "the request body could not be read"))
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	g.next.ServeHTTP(w, r.WithContext(ctx))
}

var errUnauthenticated = apierr.New(apierr.Unauthenticated, "a valid bearer token is required")

func (g *gate) bodyTooLarge() *apierr.Error {
	return &apierr.Error{Code: apierr.InvalidInput, Limit: "body", Message: fmt.Sprintf("the request body is larger than %d bytes", g.maxBody)}
}

// refuse answers a request refused before its body was read, and logs it
// with the body's declared length (-1 when not known). The connection is
// closed after the answer, so the server reads no more of the body either.
func (g *gate) refuse(ctx context.Context, w http.ResponseWriter, r *http.Request, reason string, status int, e *apierr.Error) {
	level := slog.LevelWarn
	if reason == "unauthenticated" {
		level = slog.LevelInfo
	}
	g.log.Log(ctx, level, "graphql document refused", "reason", reason, "bytes", r.ContentLength, "request_id", audit.RequestID(ctx))
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	writeError(w, status, e)
}

// unsupported says why r is not a request the HTTP transports serve: a
// JSON POST, or a GET whose URL query parses and whose variables and
// extensions, if any, are JSON objects.
func unsupported(r *http.Request) (int, *apierr.Error) {
	switch r.Method {
	case http.MethodPost:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, apierr.New(apierr.InvalidInput, "send a POST with Content-Type: application/json, a GET, or a websocket upgrade")
		}
	case http.MethodGet:
		params, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return http.StatusBadRequest, apierr.New(apierr.InvalidInput, "the URL's query string does not parse")
		}
		for _, field := range []string{"variables", "extensions"} {
			var obj map[string]any
			if v := params.Get(field); v != "" && json.Unmarshal([]byte(v), &obj) != nil {
				return http.StatusBadRequest, apierr.Invalid(field, "not a JSON object")
			}
		}
	default:
		return http.StatusMethodNotAllowed, apierr.New(apierr.InvalidInput, "send a POST with Content-Type: application/json, a GET, or a websocket upgrade")
	}
	return 0, nil
}

// checkOrigin allows a websocket from the server's own host, from an origin
// matching one of patterns (as websocket.AcceptOptions.OriginPatterns), or
// with no Origin, which browsers always send.
func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return fmt.Errorf("origin %q is not a URL with a host", origin)
	}
	if strings.EqualFold(r.Host, u.Host) {
		return nil
	}
	for _, pattern := range patterns {
		target := u.Host
		if strings.Contains(pattern, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(pattern), strings.ToLower(target)); ok {
			return nil
		}
	}
	return fmt.Errorf("origin %q is not allowed", origin)
}

// writeError answers with e alone, in the API's shape.
func writeError(w http.ResponseWriter, status int, e *apierr.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []any{toGQL(e, nil)}})
}

type methodKey struct{}

// withMethod records the HTTP method an operation came by; websocket
// operations have none.
func withMethod(ctx context.Context, method string) context.Context {
	return context.WithValue(ctx, methodKey{}, method)
}

func methodFrom(ctx context.Context) string {
	m, _ := ctx.Value(methodKey{}).(string)
	return m
}
