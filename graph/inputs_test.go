package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/better-compute/vps/graph"
)

// TestStringInputs: a NUL byte or invalid UTF-8 in any string input, given
// inline or as a variable, nested or in a list, is INVALID_INPUT naming the
// field, before any resolver runs; it never reaches the database as an
// INTERNAL error.
func TestStringInputs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("acme")
	nulKey := strings.Replace(testKey, "test@example", "te\x00st", 1)
	withKey := func(k, v any) map[string]any {
		in := w.input("web-1")
		in[k.(string)] = v
		return in
	}
	cases := []struct {
		name, token, query string
		vars               map[string]any
		field              string
	}{
		{"tenant name", e.operator, `mutation($n: String!) { createTenant(input: {name: $n}) { tenant { id } } }`,
			map[string]any{"n": "a\x00b"}, "name"},
		{"inline tenant name", e.operator, `mutation { createTenant(input: {name: "a\u0000b"}) { tenant { id } } }`,
			nil, "name"},
		{"filter name", w.member, `query($n: String) { instances(filter: {name: $n}) { nodes { id } } }`,
			map[string]any{"n": "web\x00"}, "filter.name"},
		{"idempotency key", w.member, createInstance, map[string]any{"in": withKey("idempotencyKey", "k\x00")}, "idempotencyKey"},
		{"SSH key comment", w.member, createInstance, map[string]any{"in": withKey("sshKeys", []string{testKey, nulKey})}, "sshKeys[1]"},
		{"user data", w.member, createInstance, map[string]any{"in": withKey("userData", "#cloud-config\x00")}, "userData"},
		{"provider settings", w.member, `mutation($s: Map) { createProviderAccount(input: {name: "h", provider: HETZNER, credentials: "x", settings: $s}) { providerAccount { id } } }`,
			map[string]any{"s": map[string]any{"location": "fsn\x001"}}, "settings.location"},
		{"nested map", e.operator, `mutation($m: Map) { createFlavor(input: {name: "f", vcpus: 1, memoryMb: 1, diskGb: 1, providerServerTypes: $m}) { flavor { id } } }`,
			map[string]any{"m": map[string]any{"hetzner": []any{"cx\x0022"}}}, "providerServerTypes.hetzner[0]"},
		{"map key", e.operator, `mutation($m: Map) { createFlavor(input: {name: "f", vcpus: 1, memoryMb: 1, diskGb: 1, providerServerTypes: $m}) { flavor { id } } }`,
			map[string]any{"m": map[string]any{"het\x00zner": "cx22"}}, "providerServerTypes"},
		{"ID", w.member, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": "ins_\x00"}, "id"},
		{"cursor", w.member, `query($a: String) { instances(after: $a) { nodes { id } } }`, map[string]any{"a": "\x00"}, "after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.token, c.query, c.vars)
			if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != c.field {
				t.Fatalf("errors = %+v, want INVALID_INPUT on %s", r.Errors, c.field)
			}
		})
	}
	if n := e.count("tenants", "true"); n != 1 {
		t.Errorf("%d tenants, want only acme's", n)
	}

	// Invalid UTF-8 cannot travel in JSON (decoders replace it), but it can
	// in a GET's query string.
	t.Run("invalid UTF-8 over GET", func(t *testing.T) {
		q := url.Values{"query": {`{ instances(filter: {name: "web` + "\xff\xfe" + `"}) { nodes { id } } }`}}
		req, _ := http.NewRequest(http.MethodGet, e.url+"?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+w.member)
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r response
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "filter.name" {
			t.Fatalf("errors = %+v, want INVALID_INPUT on filter.name", r.Errors)
		}
	})
}

// lockedBuffer is a log destination handlers write to from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInternalErrorRequestID: an INTERNAL error carries the request id in
// its extensions, and the server logs the failure under the same id.
func TestInternalErrorRequestID(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	e := setupWith(t, func(cfg *graph.HandlerConfig) {
		cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	// A fault inside: the table a query reads is gone.
	if _, err := e.db.Exec(context.Background(), `ALTER TABLE flavors RENAME TO flavors_gone`); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"query": `{ flavors { id } }`})
	req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.operator)
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "INTERNAL" || r.Errors[0].Message != "internal error" {
		t.Fatalf("errors = %+v", r.Errors)
	}
	id, _ := r.Errors[0].Extensions["requestId"].(string)
	if id != "req-test" {
		t.Fatalf("requestId = %q, want the request's id req-test", id)
	}
	var logged bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["level"] == "ERROR" && rec["request_id"] == id && strings.Contains(line, "flavors") {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no error logged under request_id %s:\n%s", id, logs.String())
	}
}
