package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/migrations"
	"github.com/better-compute/vps/ratelimit"
)

func config(t *testing.T, dbURL string) app.Config {
	return app.Config{
		DatabaseURL:    dbURL,
		RedisURL:       testenv.RedisURL(),
		Secret:         "test secret",
		BootstrapToken: "bct_bootstrap-token-for-tests",
		Listen:         "127.0.0.1:0",
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func TestServeRefusesAnOldSchema(t *testing.T) {
	url := testenv.EmptyDatabaseURL(t)
	_, err := app.Start(t.Context(), config(t, url))
	if err == nil || !strings.Contains(err.Error(), "better-compute migrate") {
		t.Fatalf("Start on an empty database: %v, want an error saying to run migrate", err)
	}

	db, err := app.OpenDB(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 2 { // migrating twice is harmless
		if err := migrations.Up(t.Context(), db); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations.Current(t.Context(), db); err != nil {
		t.Fatalf("after migrate: %v", err)
	}
}

// TestServeRefusesAnotherBuildsSchema starts serve on a database migrated
// before the vps migrations were renumbered: it refuses, naming the module
// and version, and leaves the database as it was.
func TestServeRefusesAnotherBuildsSchema(t *testing.T) {
	url := testenv.BeforeFoldDatabaseURL(t, 5)
	_, err := app.Start(t.Context(), config(t, url))
	var unknown *migrations.UnknownVersionError
	if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "schema vps has version 5 applied") {
		t.Fatalf("Start: %v, want an UnknownVersionError naming vps version 5", err)
	}
	var top int64
	if err := testenv.Open(t, url).QueryRow(t.Context(), "SELECT max(version_id) FROM goose_vps").Scan(&top); err != nil || top != 5 {
		t.Fatalf("goose_vps at %d, %v; want 5", top, err)
	}
}

func TestServe(t *testing.T) {
	cfg := config(t, testenv.DatabaseURL(t))
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := app.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait(ctx) }()
	base := "http://" + srv.Addr

	for _, c := range []struct{ path, want string }{
		{"/healthz", "ok"},
		{"/readyz", "ready"},
		{"/metrics", "go_goroutines"},
	} {
		resp, err := http.Get(base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), c.want) {
			t.Errorf("GET %s = %d %.200s", c.path, resp.StatusCode, body)
		}
	}

	t.Run("bootstrap token is an operator token", func(t *testing.T) {
		req, _ := http.NewRequest("POST", base+"/graphql", strings.NewReader(`{"query":"{ viewer { principal { role } } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+cfg.BootstrapToken)
		req.Header.Set("X-Request-Id", "abc-123")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"OPERATOR"`) || resp.Header.Get("X-Request-Id") != "abc-123" {
			t.Fatalf("%s (request id %q)", body, resp.Header.Get("X-Request-Id"))
		}
		resp, _ = http.Get(base + "/metrics")
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `bc_graphql_operations_total{outcome="ok",type="query"} 1`) {
			t.Fatalf("metrics miss the query:\n%s", body)
		}
	})
	t.Run("a second start keeps one bootstrap token", func(t *testing.T) {
		again, err := app.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		go again.Wait(ctx)
		db, err := app.OpenDB(ctx, cfg.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM api_tokens WHERE name = 'bootstrap'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("bootstrap tokens = %d, %v; want 1", n, err)
		}
		if err := db.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action = 'apiToken.bootstrap'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("bootstrap audit events = %d, %v; want 1", n, err)
		}
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// TestServeRateLimits: serve limits each principal's operations at the
// rates configured, answers past them with 429, and counts the refusals in
// /metrics.
func TestServeRateLimits(t *testing.T) {
	t.Parallel()
	cfg := config(t, testenv.DatabaseURL(t))
	_, cfg.RedisPrefix = testenv.Redis(t)
	cfg.RateLimits.OperatorQueries = ratelimit.Rate{PerSecond: 1.0 / 3600, Burst: 2}
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := app.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait(ctx) }()
	base := "http://" + srv.Addr

	for i, want := range []int{200, 200, 429} {
		req, _ := http.NewRequest("POST", base+"/graphql", strings.NewReader(`{"query":"{ viewer { principal { role } } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+cfg.BootstrapToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || want == 429 && (resp.Header.Get("Retry-After") != "3600" || !strings.Contains(string(body), "RATE_LIMITED")) {
			t.Fatalf("query %d: %d (Retry-After %q) %s; want %d", i+1, resp.StatusCode, resp.Header.Get("Retry-After"), body, want)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`bc_rate_limited_total{class="query",role="operator"} 1`, `bc_rate_limit_errors_total 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics misses %s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}
