package devenv

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPrivatePostgres starts the private server dev falls back to when no
// local Postgres accepts connections.
func TestPrivatePostgres(t *testing.T) {
	dir, err := os.MkdirTemp("", "devenv-pg-")
	if err != nil {
		t.Fatal(err)
	}
	// The server may run as the postgres user, which must reach the directory.
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	url, stop, err := startPrivate(context.Background(), log, dir)
	if err != nil {
		t.Fatalf("startPrivate: %v", err)
	}
	defer stop()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	defer conn.Close(context.Background())
	var db string
	if err := conn.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil || db != DevDatabase {
		t.Fatalf("current_database = %q, %v", db, err)
	}

	t.Run("restarts on its existing data", func(t *testing.T) {
		conn.Close(context.Background())
		stop()
		url2, stop2, err := startPrivate(context.Background(), log, dir)
		if err != nil {
			t.Fatal(err)
		}
		stop2()
		if url2 == "" {
			t.Fatal("no URL")
		}
	})
}

// TestSlowLocalPostgres: a local Postgres that is there but slow to answer
// (a loaded machine) is used, not taken for none, which would start a
// private server instead. The server here answers through a proxy that
// holds each connection 5 s before it passes it on.
func TestSlowLocalPostgres(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, LocalServer)
	if err != nil {
		t.Fatal(err)
	}
	local := conn.Config()
	addr := slowProxy(t, net.JoinHostPort(local.Host, strconv.Itoa(int(local.Port))), 5*time.Second)
	db := "devenv_slow_local"
	defer conn.Close(ctx)
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })

	url, err := ensureDatabase(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable", db)
	if err != nil {
		t.Fatalf("ensureDatabase through a slow server: %v", err)
	}
	if !strings.Contains(url, addr+"/"+db+"?") {
		t.Errorf("URL = %s, want database %s at %s", url, db, addr)
	}
}

// slowProxy listens on a free loopback port and passes each connection to
// target after holding it for hold. It stops when the test ends.
func slowProxy(t *testing.T, target string, hold time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				select {
				case <-time.After(hold):
				case <-done:
					return
				}
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				wg.Go(func() { <-done; c.Close(); s.Close() })
				wg.Go(func() { io.Copy(s, c) })
				io.Copy(c, s)
			})
		}
	})
	return ln.Addr().String()
}
