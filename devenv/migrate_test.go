package devenv

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/migrations"
)

// TestMigrate checks dev makes its database again, with a log line saying
// so, when another build migrated it (here: before the vps migrations were
// renumbered) or its sealing secret is new (its state directory was
// removed), and keeps it when it is current and its secret is the same.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		url       func(testing.TB) string
		newSecret bool
		recreate  bool
	}{
		{"before the fold, at its 0005_provider_instances", func(t testing.TB) string { return testenv.BeforeFoldDatabaseURL(t, 5) }, false, true},
		{"before the fold, at 0002_sealed_user_data", func(t testing.TB) string { return testenv.BeforeFoldDatabaseURL(t, 2) }, false, true},
		{"current", testenv.DatabaseURL, false, false},
		{"current, with a new secret", testenv.DatabaseURL, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := c.url(t)
			query(t, url, "INSERT INTO tenants (id, name) VALUES (gen_random_uuid(), 'demo')")
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))

			if err := Migrate(ctx, log, url, c.newSecret); err != nil {
				t.Fatalf("Migrate: %v", err)
			}

			if logged.Len() > 0 {
				t.Logf("log: %s", logged.String())
			}
			said := strings.Contains(logged.String(), "recreating the dev database")
			if said != c.recreate {
				t.Errorf("logged a recreation: %v, want %v", said, c.recreate)
			}
			if kept := query(t, url, "SELECT count(*)::text FROM tenants WHERE name = 'demo'") == "1"; kept == c.recreate {
				t.Errorf("demo data kept: %v, want %v", kept, !c.recreate)
			}
			var want []string
			entries, _ := fs.ReadDir(migrations.Files, "vps")
			for _, e := range entries {
				n, _, _ := strings.Cut(e.Name(), "_")
				v, err := strconv.Atoi(n)
				if err != nil {
					t.Fatalf("migration %s: %v", e.Name(), err)
				}
				want = append(want, strconv.Itoa(v))
			}
			if got := query(t, url, "SELECT string_agg(version_id::text, ',' ORDER BY version_id) FROM goose_vps WHERE version_id > 0"); got != strings.Join(want, ",") {
				t.Errorf("vps versions %s, want %s", got, strings.Join(want, ","))
			}
			// The new numbering's instances table, its columns in the order
			// the migrations add them, as in a database made today.
			const columns = "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'instances'::regclass AND attnum > 0 AND NOT attisdropped"
			if got, want := query(t, url, columns), query(t, testenv.DatabaseURL(t), columns); got != want {
				t.Errorf("instances has columns %s, want %s", got, want)
			}
			pool := testenv.Open(t, url)
			if err := migrations.Current(ctx, pool); err != nil {
				t.Errorf("Current: %v", err)
			}
		})
	}
}

// query runs sql on its own connection and returns the first column of its
// first row, if any.
func query(t *testing.T, url, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var s *string
	if rows.Next() {
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if s == nil {
		return ""
	}
	return *s
}
