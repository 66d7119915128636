package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/live"
)

// reply is an HTTP answer of the endpoint: its status, body and errors.
type reply struct {
	status int
	body   []byte
	response
}

// send sends req, as token when one is given, and decodes the answer.
func (e *env) send(t *testing.T, req *http.Request, token string) reply {
	t.Helper()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s /graphql: %v", req.Method, err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	r.body, _ = io.ReadAll(resp.Body)
	if err := json.Unmarshal(r.body, &r.response); err != nil {
		t.Fatalf("decode (HTTP %d): %v: %.300s", resp.StatusCode, err, r.body)
	}
	return r
}

// postRequest is a JSON POST of body to the endpoint.
func (e *env) postRequest(ctx context.Context, body io.Reader) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, body)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// TestBodyLimit: a body over MaxBody is refused with 413 and a coded error,
// whether or not the caller has a token, and whether or not it said its
// length up front.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Limits.MaxBody = 64 << 10 })
	query := `{"query":"{ viewer { principal { name } } }` + strings.Repeat(" ", 64<<10) + `"}`
	for _, c := range []struct {
		name    string
		token   string
		chunked bool // no Content-Length: the cap is met while reading
	}{
		{"with a token", e.operator, false},
		{"with a token, chunked", e.operator, true},
		{"without a token", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var body io.Reader = strings.NewReader(query)
			if c.chunked {
				body = io.MultiReader(body) // hides the length
			}
			r := e.send(t, e.postRequest(t.Context(), body), c.token)
			if r.status != http.StatusRequestEntityTooLarge || r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Limit != "body" {
				t.Fatalf("HTTP %d %.300s, want 413 INVALID_INPUT limit body", r.status, r.body)
			}
		})
	}
	t.Run("a body under the cap", func(t *testing.T) {
		t.Parallel()
		r := e.send(t, e.postRequest(t.Context(), strings.NewReader(query[:60<<10]+`"}`)), e.operator)
		if r.status != http.StatusOK || len(r.Errors) > 0 {
			t.Fatalf("HTTP %d %.300s", r.status, r.body)
		}
	})
}

// TestAnonymousRefusedBeforeTheBody: a request without a valid token is
// answered UNAUTHENTICATED before its body is read: here a body that never
// ends.
func TestAnonymousRefusedBeforeTheBody(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, token := range []string{"", "bct_not-a-token"} {
		t.Run("token "+token, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			pr, pw := io.Pipe()
			context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
			go pw.Write([]byte(`{"query":"{ viewer { principal { name } } }`)) // and never more
			r := e.send(t, e.postRequest(ctx, pr), token)
			if r.status != http.StatusUnauthorized || r.code() != "UNAUTHENTICATED" {
				t.Fatalf("HTTP %d %.300s, want 401 UNAUTHENTICATED", r.status, r.body)
			}
		})
	}
}

// TestSubscriptionsOnlyOverWebsocket: a subscription sent over HTTP is
// refused at once with a coded error, not held open.
func TestSubscriptionsOnlyOverWebsocket(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Live = live.New(live.Config{Redis: rdb, Prefix: prefix}) })
	const sub = `subscription { instanceEvents { version } }`
	body, _ := json.Marshal(map[string]any{"query": sub})
	for name, request := range map[string]func(context.Context) *http.Request{
		"POST": func(ctx context.Context) *http.Request { return e.postRequest(ctx, bytes.NewReader(body)) },
		"GET": func(ctx context.Context) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"?query="+url.QueryEscape(sub), nil)
			return req
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			r := e.send(t, request(ctx), e.operator)
			if r.code() != "INVALID_INPUT" || !strings.Contains(r.Errors[0].Message, "websocket") {
				t.Fatalf("HTTP %d %.300s, want INVALID_INPUT naming the websocket", r.status, r.body)
			}
		})
	}
}
