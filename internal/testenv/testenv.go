// Package testenv gives tests their own real Postgres database, migrated,
// and a Redis client. Postgres and Redis must run (make test starts them);
// a test fails loudly, never skips, when they do not.
package testenv

import (
	"github.com/better-compute/vps/internal/pguuid"

	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/migrations"
)

// ServerURL is the Postgres server tests create their databases on
// (TEST_DATABASE_URL).
func ServerURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// DB returns a pool on a fresh, migrated database of its own, dropped when
// the test ends.
func DB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Open(t, DatabaseURL(t))
}

// Open returns a pool on url, closed when the test ends, that encodes
// UUIDs as app.OpenDB's does (pguuid).
func Open(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("testenv: parse %s: %v", url, err)
	}
	cfg.AfterConnect = pguuid.AfterConnect
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testenv: connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// DatabaseURL creates a fresh, migrated database for t and returns its URL.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, template(t))
}

// EmptyDatabaseURL creates a fresh database without any schema.
func EmptyDatabaseURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "template0")
}

// beforeFold holds the migrations as numbered until vps/0003_placement,
// 0004_provider_mappings and 0005_provider_instances were folded into
// vps/0001_instances (and images.provider_images into
// platform/0001_platform): migrations/ as of commit 7bc9c7c.
//
//go:embed testdata/before-fold
var beforeFold embed.FS

// BeforeFoldDatabaseURL creates a fresh database migrated as a dev database
// made before the fold was: with beforeFold, the vps set up to version
// vps. It returns its URL.
func BeforeFoldDatabaseURL(t testing.TB, vps int64) string {
	t.Helper()
	ctx := context.Background()
	url := EmptyDatabaseURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("testenv: connect: %v", err)
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, module := range []string{"platform", "vps"} {
		sub, _ := fs.Sub(beforeFold, "testdata/before-fold/"+module)
		p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
			goose.WithTableName("goose_"+module), goose.WithDisableGlobalRegistry(true))
		if err != nil {
			t.Fatalf("testenv: load the %s migrations before the fold: %v", module, err)
		}
		if module == "vps" {
			_, err = p.UpTo(ctx, vps)
		} else {
			_, err = p.Up(ctx)
		}
		if err != nil {
			t.Fatalf("testenv: apply the %s migrations before the fold: %v", module, err)
		}
	}
	return url
}

func newDatabase(t testing.TB, from string) string {
	ctx := context.Background()
	conn := server(t)
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	name := "bc_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, pgx.Identifier{from}.Sanitize())); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		conn := server(t)
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testenv: drop database %s: %v", name, err)
		}
	})
	return withDatabase(ServerURL(), name)
}

func server(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatalf("testenv: POSTGRES IS NOT RUNNING at %s (run `make test`, which starts it): %v", ServerURL(), err)
	}
	return conn
}

// template returns a database migrated to the current schema, named by a
// hash of the migrations so every test process shares it and a changed
// migration gets a new one.
func template(t testing.TB) string {
	ctx := context.Background()
	h := sha256.New()
	fs.WalkDir(migrations.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(migrations.Files, path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return nil
	})
	name := "bc_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]

	conn := server(t)
	defer conn.Close(ctx)
	// Test processes of several packages race to build the template.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(727272)"); err != nil {
		t.Fatalf("testenv: lock: %v", err)
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(727272)")
	var ready bool
	err := conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	if err == nil && ready {
		return name
	}
	if err == nil {
		conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)") // a half-built one
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testenv: create template: %v", err)
	}
	pool, err := pgxpool.New(ctx, withDatabase(ServerURL(), name))
	if err != nil {
		t.Fatalf("testenv: connect template: %v", err)
	}
	err = migrations.Up(ctx, pool)
	pool.Close()
	if err != nil {
		t.Fatalf("testenv: migrate template: %v", err)
	}
	if _, err := conn.Exec(ctx, "UPDATE pg_database SET datistemplate = true WHERE datname = $1", name); err != nil {
		t.Fatalf("testenv: mark template: %v", err)
	}
	return name
}

func withDatabase(url, db string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url
	}
	rest := ""
	if i := strings.Index(url, "?"); i >= 0 {
		rest = url[i:]
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s%s", cfg.User, cfg.Host, cfg.Port, db, rest)
}

// RedisURL is the Redis tests use (TEST_REDIS_URL).
func RedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Redis returns a client on the test Redis and a key prefix of t's own.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("testenv: REDIS IS NOT RUNNING at %s (run `make test`, which starts it): %v", RedisURL(), err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	return c, "test:" + hex.EncodeToString(b) + ":"
}
