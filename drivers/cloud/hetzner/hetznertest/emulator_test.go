package hetznertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/cloud/cloudtest"
	"github.com/better-compute/vps/internal/testenv"
)

type env struct {
	emu   *Emulator
	url   string
	clock *testenv.Clock
	d     time.Duration // the emulator's ActionDuration
}

// setup starts an emulator on cfg behind httptest, on a manual clock that
// only the test advances.
func setup(t *testing.T, cfg Config) env {
	t.Helper()
	clock := testenv.NewClock()
	cfg.Now = clock.Now
	e := New(cfg)
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return env{emu: e, url: srv.URL, clock: clock, d: e.cfg.ActionDuration}
}

// call sends a request with the default token and decodes the JSON answer.
func (e env) call(t *testing.T, method, path string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	return e.callAs(t, DefaultToken, method, path, body)
}

func (e env) callAs(t *testing.T, token, method, path string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, resp.Header
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (e env) status(t *testing.T, id int64) string {
	t.Helper()
	code, body, _ := e.call(t, "GET", fmt.Sprintf("/v1/servers/%d", id), nil)
	if code == http.StatusNotFound {
		return "gone"
	}
	s, _ := body["server"].(map[string]any)
	st, _ := s["status"].(string)
	return st
}

// walk checks the statuses of a server one ActionDuration apart: the
// first now, then each after advancing the clock by one ActionDuration.
func (e env) walk(t *testing.T, id int64, statuses ...string) {
	t.Helper()
	for i, want := range statuses {
		if i > 0 {
			e.clock.Advance(e.d)
		}
		if got := e.status(t, id); got != want {
			t.Fatalf("status at %v = %q, want %q (walking %v)", time.Duration(i)*e.d, got, want, statuses)
		}
	}
}

// actionStatus returns the status GET /v1/actions/{id} reports.
func (e env) actionStatus(t *testing.T, id int64) string {
	t.Helper()
	_, body, _ := e.call(t, "GET", fmt.Sprintf("/v1/actions/%d", id), nil)
	a, _ := body["action"].(map[string]any)
	st, _ := a["status"].(string)
	return st
}

func TestAuth(t *testing.T) {
	e := setup(t, Config{Token: "right"})
	for _, tok := range []string{"", "wrong"} {
		code, body, h := e.callAs(t, tok, "GET", "/v1/servers", nil)
		if code != http.StatusUnauthorized || errCode(body) != "unauthorized" || h.Get("RateLimit-Limit") == "" {
			t.Errorf("token %q: %d %v %v", tok, code, body, h)
		}
	}
	if code, _, _ := e.callAs(t, "right", "GET", "/v1/servers", nil); code != http.StatusOK {
		t.Errorf("right token: %d", code)
	}
}

func TestRateLimit(t *testing.T) {
	e := setup(t, Config{RateLimit: 2, RefillPerSecond: 0.5})
	for i, want := range []string{"1", "0"} {
		code, _, h := e.call(t, "GET", "/v1/servers", nil)
		if code != http.StatusOK || h.Get("RateLimit-Remaining") != want || h.Get("RateLimit-Limit") != "2" {
			t.Fatalf("call %d: %d remaining %q", i, code, h.Get("RateLimit-Remaining"))
		}
	}
	code, body, h := e.call(t, "GET", "/v1/servers", nil)
	if code != http.StatusTooManyRequests || errCode(body) != "rate_limit_exceeded" || h.Get("Retry-After") != "2" {
		t.Errorf("empty bucket: %d %v Retry-After %q", code, body, h.Get("Retry-After"))
	}
	reset, _ := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64)
	now := e.clock.Now()
	if full := time.Unix(reset, 0); full.Before(now.Add(4*time.Second)) || !full.Before(now.Add(5*time.Second)) {
		t.Errorf("RateLimit-Reset = %v, want 4s after %v, rounded up to the second", full, now)
	}
}

func TestLifecycle(t *testing.T) {
	e := setup(t, Config{ActionDuration: 100 * time.Millisecond})
	code, body, _ := e.call(t, "POST", "/v1/servers", map[string]any{
		"name": "web-1", "server_type": "cx22", "image": "ubuntu-24.04", "location": "nbg1",
		"start_after_create": false, "labels": map[string]string{"app": "web"},
	})
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	srv := body["server"].(map[string]any)
	id := int64(srv["id"].(float64))
	if srv["status"] != "initializing" || body["root_password"] == nil || body["action"].(map[string]any)["command"] != "create_server" {
		t.Errorf("create answered %v", body)
	}
	e.walk(t, id, "initializing", "off")

	// statuses: one ActionDuration apart, from the call on.
	steps := []struct {
		command  string
		statuses []string
	}{
		{"poweron", []string{"starting", "running"}},
		{"reboot", []string{"running", "running"}},
		{"shutdown", []string{"stopping", "stopping", "off"}},
		{"poweron", []string{"starting", "running"}},
		{"poweroff", []string{"stopping", "off"}},
	}
	for _, s := range steps {
		code, body, _ := e.call(t, "POST", fmt.Sprintf("/v1/servers/%d/actions/%s", id, s.command), nil)
		if code != http.StatusCreated {
			t.Fatalf("%s: %d %v", s.command, code, body)
		}
		// A second action while the first runs: locked.
		if code, body, _ := e.call(t, "POST", fmt.Sprintf("/v1/servers/%d/actions/poweroff", id), nil); code != http.StatusLocked || errCode(body) != "locked" {
			t.Errorf("%s: another action on the locked server: %d %v", s.command, code, body)
		}
		actionID := int64(body["action"].(map[string]any)["id"].(float64))
		if st := e.actionStatus(t, actionID); st != "running" {
			t.Errorf("%s: action status %q right after the call, want running", s.command, st)
		}
		e.walk(t, id, s.statuses...)
		_, body, _ = e.call(t, "GET", fmt.Sprintf("/v1/actions?id=%d&id=999", actionID), nil)
		if actions := body["actions"].([]any); len(actions) != 1 || actions[0].(map[string]any)["status"] != "success" {
			t.Errorf("%s: actions after %v = %v, want the one, succeeded", s.command, e.d, actions)
		}
	}

	code, body, _ = e.call(t, "DELETE", fmt.Sprintf("/v1/servers/%d", id), nil)
	if code != http.StatusOK || body["action"].(map[string]any)["command"] != "delete_server" {
		t.Fatalf("delete: %d %v", code, body)
	}
	e.walk(t, id, "deleting", "gone")
	if code, body, _ := e.call(t, "POST", fmt.Sprintf("/v1/servers/%d/actions/poweron", id), nil); code != http.StatusNotFound || errCode(body) != "not_found" {
		t.Errorf("poweron of a deleted server: %d %v", code, body)
	}
}

func TestStartAfterCreate(t *testing.T) {
	e := setup(t, Config{ActionDuration: 100 * time.Millisecond})
	_, body, _ := e.call(t, "POST", "/v1/servers", map[string]any{"name": "a", "server_type": "cx22", "image": "debian-12"})
	id := int64(body["server"].(map[string]any)["id"].(float64))
	if next := body["next_actions"].([]any); len(next) != 1 {
		t.Errorf("next_actions = %v", next)
	}
	e.walk(t, id, "initializing", "starting", "running")
}

func TestIgnoreShutdown(t *testing.T) {
	e := setup(t, Config{ActionDuration: 10 * time.Millisecond, IgnoreShutdown: true})
	id, _ := e.emu.AddServer("a", nil)
	_, body, _ := e.call(t, "POST", fmt.Sprintf("/v1/servers/%d/actions/shutdown", id), nil)
	actionID := int64(body["action"].(map[string]any)["id"].(float64))
	e.clock.Advance(e.d)
	if st := e.actionStatus(t, actionID); st != "success" {
		t.Errorf("action status after %v = %q, want success", e.d, st)
	}
	e.walk(t, id, "running", "running") // the guest would be off at 2D

}

func TestCreateErrors(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"name": "a", "server_type": "cx22", "image": "ubuntu-24.04"}
	}
	with := func(k string, v any) map[string]any { b := base(); b[k] = v; return b }
	for _, tc := range []struct {
		name   string
		limit  int
		body   any
		status int
		code   string
		field  string
	}{
		{"unknown server type", 0, with("server_type", "cx9000"), 400, "invalid_input", "server_type"},
		{"unknown image", 0, with("image", "windows"), 400, "invalid_input", "image"},
		{"unknown location", 0, with("location", "mars1"), 400, "invalid_input", "location"},
		{"bad name", 0, with("name", "-x_"), 400, "invalid_input", "name"},
		{"bad label", 0, with("labels", map[string]string{"k": "a b"}), 400, "invalid_input", "labels"},
		{"unknown ssh key", 0, with("ssh_keys", []any{42}), 400, "invalid_input", "ssh_keys"},
		{"name taken", 0, with("name", "taken"), 409, "uniqueness_error", ""},
		{"limit", 1, base(), 403, "resource_limit_exceeded", ""},
		{"bad JSON", 0, "{", 400, "json_error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, Config{})
			e.emu.AddServer("taken", nil)
			if tc.limit > 0 {
				e.emu.SetServerLimit(tc.limit)
			}
			code, body, _ := e.call(t, "POST", "/v1/servers", tc.body)
			if code != tc.status || errCode(body) != tc.code {
				t.Fatalf("got %d %v, want %d %s", code, body, tc.status, tc.code)
			}
			if tc.field != "" {
				fields := body["error"].(map[string]any)["details"].(map[string]any)["fields"].([]any)
				if fields[0].(map[string]any)["name"] != tc.field {
					t.Errorf("fields = %v", fields)
				}
			}
		})
	}
}

func TestListServers(t *testing.T) {
	e := setup(t, Config{})
	for i := 0; i < 60; i++ {
		labels := map[string]string{"bc": fmt.Sprint(i % 3)}
		if i%2 == 0 {
			labels["even"] = ""
		}
		if _, err := e.emu.AddServer(fmt.Sprintf("s%d", i), labels); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		query               string
		n, total, last      int
		prev, next, perPage any
	}{
		{"", 25, 60, 3, nil, 2.0, 25.0},
		{"?page=3", 10, 60, 3, 2.0, nil, 25.0},
		{"?per_page=100", 50, 60, 2, nil, 2.0, 50.0},
		{"?label_selector=bc", 25, 60, 3, nil, 2.0, 25.0},
		{"?label_selector=bc=1&per_page=50", 20, 20, 1, nil, nil, 50.0},
		{"?label_selector=bc==1,even", 10, 10, 1, nil, nil, 25.0},
		{"?label_selector=bc!=1,!even", 20, 20, 1, nil, nil, 25.0},
		{"?label_selector=bc+in+(0,2),even&per_page=50", 20, 20, 1, nil, nil, 50.0},
		{"?label_selector=bc+notin+(0,2)&per_page=50", 20, 20, 1, nil, nil, 50.0},
		{"?label_selector=nope", 0, 0, 1, nil, nil, 25.0},
		{"?name=s7", 1, 1, 1, nil, nil, 25.0},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body, _ := e.call(t, "GET", "/v1/servers"+tc.query, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %v", code, body)
			}
			p := body["meta"].(map[string]any)["pagination"].(map[string]any)
			if n := len(body["servers"].([]any)); n != tc.n || p["total_entries"] != float64(tc.total) ||
				p["last_page"] != float64(tc.last) || p["previous_page"] != tc.prev || p["next_page"] != tc.next ||
				p["per_page"] != tc.perPage {
				t.Errorf("%d servers, pagination %v", n, p)
			}
		})
	}
	if code, body, _ := e.call(t, "GET", "/v1/servers?label_selector=a=b=c", nil); code != 400 || errCode(body) != "invalid_input" {
		t.Errorf("bad selector: %d %v", code, body)
	}
}

func TestSSHKeys(t *testing.T) {
	e := setup(t, Config{})
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtQ8FRi/HB8Zf3vzpSnIMhJMM4hAbTT7+P4+Slzqn6A test"
	code, body, _ := e.call(t, "POST", "/v1/ssh_keys", map[string]any{"name": "k", "public_key": key, "labels": map[string]string{"x": ""}})
	if code != http.StatusCreated {
		t.Fatalf("%d %v", code, body)
	}
	fp := body["ssh_key"].(map[string]any)["fingerprint"].(string)
	if code, body, _ := e.call(t, "POST", "/v1/ssh_keys", map[string]any{"name": "k2", "public_key": key}); code != 409 || errCode(body) != "uniqueness_error" {
		t.Errorf("same key again: %d %v", code, body)
	}
	_, body, _ = e.call(t, "GET", "/v1/ssh_keys?fingerprint="+fp, nil)
	if keys := body["ssh_keys"].([]any); len(keys) != 1 {
		t.Errorf("by fingerprint: %v", keys)
	}
	code, body, _ = e.call(t, "POST", "/v1/servers", map[string]any{"name": "a", "server_type": "cx22", "image": "debian-12", "ssh_keys": []any{"k"}})
	if code != http.StatusCreated || body["root_password"] != nil {
		t.Errorf("create with key: %d %v", code, body)
	}
	if v := e.emu.Servers(); len(v) != 1 || strings.Join(v[0].SSHKeys, ",") != "k" {
		t.Errorf("servers %+v", v)
	}
}

func TestFaults(t *testing.T) {
	e := setup(t, Config{})
	e.emu.Faults().Inject(cloudtest.Fault{Match: "POST /v1/servers", Count: 1, Status: 503, Body: ErrorBody("unavailable", "down")})
	code, body, _ := e.call(t, "POST", "/v1/servers", map[string]any{"name": "a", "server_type": "cx22", "image": "debian-12"})
	if code != 503 || errCode(body) != "unavailable" {
		t.Errorf("%d %v", code, body)
	}
	if len(e.emu.Servers()) != 0 {
		t.Error("the failed create made a server")
	}
	e.call(t, "GET", "/v1/servers/123", nil)
	if c := e.emu.Faults().Calls(); c["POST /v1/servers"] != 1 || c["GET /v1/servers/{id}"] != 1 {
		t.Errorf("calls %v", c)
	}
}

func TestHooks(t *testing.T) {
	e := setup(t, Config{})
	id, err := e.emu.AddServer("a", map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.emu.AddServer("a", nil); err == nil {
		t.Error("AddServer took a used name")
	}
	if v := e.emu.Servers(); len(v) != 1 || v[0].Status != "running" || v[0].Labels["k"] != "v" {
		t.Errorf("Servers = %+v", v)
	}
	if !e.emu.DeleteServer(id) || e.emu.DeleteServer(id) || len(e.emu.Servers()) != 0 {
		t.Error("DeleteServer")
	}
}
