package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/migrations"
)

// TestVPSNames checks the embedded vps migrations are named as the design
// document names their numbers, in order, so the numbers not embedded yet
// stay free for the issues the document gives them to; ours past its list
// are numbered from 0013 on.
func TestVPSNames(t *testing.T) {
	entries, err := fs.ReadDir(migrations.Files, "vps")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if len(files) == 0 {
		t.Fatal("no vps migrations embedded")
	}
	if err := designNames(files); err != nil {
		t.Fatal(err)
	}

	t.Run("a migration off the list fails", func(t *testing.T) {
		for _, files := range [][]string{
			{"0001_instances.sql", "0002_sealed_user_data.sql", "0003_placement.sql"},
			{"0001_instances.sql", "0004_sandbox.sql"},
			{"0001_instances.sql", "0012_sandboxes.sql"},
			{"0002_sealed_user_data.sql"},
			{"0001_instances.sql", "0002_sealed_user_data.sql", "0001_instances.down.sql"},
			{"0001_instances.sql", "0013_ours.sql", "0013_again.sql"},
			{"0001_instances.sql", "13_ours.sql"},
		} {
			if designNames(files) == nil {
				t.Errorf("%v passes", files)
			}
		}
	})
	t.Run("kept numbers may be missing", func(t *testing.T) {
		files := []string{"0001_instances.sql", "0002_sealed_user_data.sql", "0004_sandboxes.sql", "0006_warm_claims.sql", "0013_ours.sql", "0014_more.sql"}
		if err := designNames(files); err != nil {
			t.Error(err)
		}
	})
}

// designNames says whether the vps migration files, as fs.ReadDir lists
// them (sorted), start with 0001_instances, name each number of
// migrations.VPSDesign as it does, and number the others past its list,
// each number once.
func designNames(files []string) error {
	if len(files) == 0 || "vps/"+strings.TrimSuffix(files[0], ".sql") != migrations.VPSDesign[0] {
		return fmt.Errorf("the vps migrations start with %v, not %s", files, migrations.VPSDesign[0])
	}
	last := 0
	for _, f := range files {
		num, _, ok := strings.Cut(f, "_")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 4 || !strings.HasSuffix(f, ".sql") || strings.Count(f, ".") != 1 {
			return fmt.Errorf("vps migration %s is not named NNNN_name.sql", f)
		}
		if n <= last {
			return fmt.Errorf("vps migration %s repeats number %d", f, n)
		}
		last = n
		if n <= len(migrations.VPSDesign) {
			if got, want := "vps/"+strings.TrimSuffix(f, ".sql"), migrations.VPSDesign[n-1]; got != want {
				return fmt.Errorf("vps migration %d is %s.sql, the design document names %s", n, got, want)
			}
		}
	}
	return nil
}

// TestUnknownVersions checks Up and Current refuse, changing nothing, a
// database whose version tables hold what this binary does not: one made
// before the vps migrations were renumbered, or by a newer build.
func TestUnknownVersions(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		url     func(t *testing.T) string
		version int64
		says    string
	}{
		{"before the fold, at its 0005_provider_instances", func(t *testing.T) string { return testenv.BeforeFoldDatabaseURL(t, 5) },
			5, "as numbered before 0003_placement"},
		{"before the fold, at 0002_sealed_user_data", func(t *testing.T) string { return testenv.BeforeFoldDatabaseURL(t, 2) },
			2, "as numbered before 0003_placement"},
		// Once the new 0003–0005 exist, a database at the old 0005 has only
		// versions this binary knows; its instances table still tells.
		{"before the fold, with versions this binary has", func(t *testing.T) string {
			url := testenv.BeforeFoldDatabaseURL(t, 5)
			exec(t, testenv.Open(t, url), "DELETE FROM goose_vps WHERE version_id > 2")
			return url
		}, 2, "as numbered before 0003_placement"},
		{"by a newer build", func(t *testing.T) string {
			url := testenv.DatabaseURL(t)
			exec(t, testenv.Open(t, url), "INSERT INTO goose_vps (version_id, is_applied) VALUES (99, true)")
			return url
		}, 99, "from a migration this binary does not have"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pool := testenv.Open(t, c.url(t))
			before := versions(t, pool)
			for _, f := range []struct {
				name string
				fn   func(context.Context, *pgxpool.Pool) error
			}{{"Up", migrations.Up}, {"Current", migrations.Current}} {
				err := f.fn(ctx, pool)
				var unknown *migrations.UnknownVersionError
				if !errors.As(err, &unknown) || unknown.Module != "vps" || unknown.Version != c.version {
					t.Fatalf("%s = %v, want an UnknownVersionError for vps version %d", f.name, err, c.version)
				}
				msg := err.Error()
				for _, want := range []string{fmt.Sprintf("schema vps has version %d applied", c.version), c.says, "refusing"} {
					if !strings.Contains(msg, want) {
						t.Errorf("%s says %q, want it to say %q", f.name, msg, want)
					}
				}
			}
			if after := versions(t, pool); after != before {
				t.Errorf("versions went from %s to %s", before, after)
			}
		})
	}

	t.Run("a current database", func(t *testing.T) {
		pool := testenv.DB(t)
		if err := migrations.Up(ctx, pool); err != nil {
			t.Fatalf("Up: %v", err)
		}
		if err := migrations.Current(ctx, pool); err != nil {
			t.Fatalf("Current: %v", err)
		}
	})
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// versions lists both modules' version tables.
func versions(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	err := pool.QueryRow(context.Background(), `SELECT
		(SELECT string_agg(version_id::text, ',' ORDER BY id) FROM goose_platform) || ' ' ||
		(SELECT string_agg(version_id::text, ',' ORDER BY id) FROM goose_vps)`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKeptNumberArrivesLate checks a migration whose number the design
// document kept, arriving after later ones were applied (0005 once 0013
// is), is reported pending and applied: 0006 is taken back out of a
// current database to stand for it.
func TestKeptNumberArrivesLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	exec(t, pool, "ALTER TABLE instances DROP COLUMN claimed_at")
	exec(t, pool, "DELETE FROM goose_vps WHERE version_id = 6")

	err := migrations.Current(ctx, pool)
	if err == nil || !strings.Contains(err.Error(), "pending") {
		t.Fatalf("Current = %v, want migrations pending", err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("Up: %v", err)
	}
	if err := migrations.Current(ctx, pool); err != nil {
		t.Fatalf("Current after Up: %v", err)
	}
	exec(t, pool, "SELECT claimed_at FROM instances")
}
