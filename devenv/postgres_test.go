package devenv

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

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
