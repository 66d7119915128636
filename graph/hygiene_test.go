package graph_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/graph"
)

// TestErrorHygiene: every error the endpoint answers, however the request
// is malformed, has a documented code and a short message that names no
// Go type and does not echo the request; anonymous callers get no field
// suggestions.
func TestErrorHygiene(t *testing.T) {
	t.Parallel()
	// Selections past the default limit reach the complexity limit.
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Limits.MaxSelections = 10_000 })
	junk := `{"query": "` + strings.Repeat("x", 900<<10) // malformed JSON just under the body cap
	post := func(body, contentType string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		return req
	}
	get := func(rawQuery string) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, e.url+"?"+rawQuery, nil)
		return req
	}
	put, _ := http.NewRequest(http.MethodPut, e.url, strings.NewReader("x"))
	for _, c := range []struct {
		name  string
		req   *http.Request
		token string
		code  string
	}{
		{"malformed JSON", post(junk, "application/json"), e.operator, "INVALID_INPUT"},
		{"a batch", post(`[{"query":"{ viewer { principal { name } } }"}]`, "application/json"), e.operator, "INVALID_INPUT"},
		{"a query of the wrong type", post(`{"query": 42}`, "application/json"), e.operator, "INVALID_INPUT"},
		{"syntax error", post(`{"query":"{ viewer { "}`, "application/json"), e.operator, "INVALID_INPUT"},
		{"complexity", post(`{"query":"`+repeated(700)+`"}`, "application/json"), e.operator, "INVALID_INPUT"},
		{"another content type", post(`{"query":"{ viewer { id } }"}`, "application/jsonx"), e.operator, "INVALID_INPUT"},
		{"another method", put, e.operator, "INVALID_INPUT"},
		{"a mutation over GET", get("query=" + url.QueryEscape(`mutation { createTenant(input: {name: "x"}) { tenant { id } } }`)), e.operator, "INVALID_INPUT"},
		{"variables over GET that are not JSON", get("query=" + url.QueryEscape(`{ viewer { id } }`) + "&variables=nope"), e.operator, "INVALID_INPUT"},
		{"a GET query that does not parse", get("query=%zz"), e.operator, "INVALID_INPUT"},
		{"an anonymous typo", post(`{"query":"{ viewr { principal { name } } }"}`, "application/json"), "", "UNAUTHENTICATED"},
		{"a typo", post(`{"query":"{ viewr { principal { name } } }"}`, "application/json"), e.operator, "INVALID_INPUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.send(t, c.req, c.token)
			if len(r.Errors) == 0 {
				t.Fatalf("HTTP %d %.300s: no error", r.status, r.body)
			}
			for _, err := range r.Errors {
				if !apierr.Code(err.Extensions.Code).Documented() || err.Extensions.Code != c.code {
					t.Errorf("code %q, want %s: %.300s", err.Extensions.Code, c.code, r.body)
				}
				if len(err.Message) > 240 {
					t.Errorf("a message of %d bytes: %.300s", len(err.Message), err.Message)
				}
				for _, leak := range []string{"Go ", "graphql.", "RawParams", "xxxxxxxx"} {
					if strings.Contains(err.Message, leak) {
						t.Errorf("message has %q: %.300s", leak, err.Message)
					}
				}
				if c.token == "" && strings.Contains(err.Message, "Did you mean") {
					t.Errorf("an anonymous caller got a suggestion: %s", err.Message)
				}
			}
			if len(r.body) > 4096 {
				t.Errorf("a %d-byte answer", len(r.body))
			}
		})
	}
	t.Run("complexity names its limit", func(t *testing.T) {
		r := e.do(e.operator, repeated(700), nil)
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Limit != "complexity" {
			t.Fatalf("errors = %+.300v", r.Errors)
		}
	})
}

// TestRefusedOriginIsLogged: a websocket from another origin is refused
// with one structured log line.
func TestRefusedOriginIsLogged(t *testing.T) {
	t.Parallel()
	logs := &logSink{}
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Logger = slogOf(logs) })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http"), &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin dial: %v (%v)", err, resp)
	}
	recs := logs.logged("websocket origin refused")
	if len(recs) != 1 || recs[0].Attrs["origin"] != "https://evil.example" || recs[0].Attrs["request_id"] != "req-test" {
		t.Fatalf("logged %+v", recs)
	}
}
