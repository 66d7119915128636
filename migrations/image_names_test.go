package migrations_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/migrations"
)

// TestImageNamesUniquePerOwner: platform/0010_image_names makes live image
// names unique per owner on a database that already has duplicates: the
// newest of each name keeps it, the others get their id's end appended; a
// tenant's image may share a public image's name, and a deleted image
// keeps its name. A duplicate written after it is refused.
func TestImageNamesUniquePerOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Open(t, testenv.EmptyDatabaseURL(t))
	sub, err := fs.Sub(migrations.Files, "platform")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), sub,
		goose.WithTableName("goose_platform"), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) error {
		_, err := pool.Exec(ctx, sql)
		return err
	}
	const tenant = "00000000-0000-0000-0000-00000000000a"
	img := func(id, name, owner, created, deleted string) string {
		visibility := "'public'"
		if owner != "NULL" {
			visibility = "'tenant'"
		}
		return `INSERT INTO images (id, name, source, sha256, format, visibility, tenant_id, created_at, deleted_at) VALUES ('` +
			id + `', '` + name + `', 'file:///i', repeat('a', 64), 'raw', ` + visibility + `, ` + owner + `, '` + created + `', ` + deleted + `)`
	}
	tenantID := "'" + tenant + "'"
	for _, sql := range []string{
		`INSERT INTO tenants (id, name) VALUES ('` + tenant + `', 'acme')`,
		img("00000000-0000-0000-0000-000000000001", "debian", "NULL", "2026-01-01", "NULL"),
		img("00000000-0000-0000-0000-000000000002", "debian", "NULL", "2026-02-01", "NULL"),
		img("00000000-0000-0000-0000-000000000003", "debian", "NULL", "2025-01-01", "'2025-06-01'"),
		img("00000000-0000-0000-0000-000000000004", "debian", tenantID, "2026-01-01", "NULL"),
		img("00000000-0000-0000-0000-000000000005", "alpine", tenantID, "2026-01-01", "NULL"),
		img("00000000-0000-0000-0000-000000000006", "alpine", tenantID, "2026-03-01", "NULL"),
	} {
		if err := exec(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"00000000-0000-0000-0000-000000000001": "debian-000000000001", // the older public one
		"00000000-0000-0000-0000-000000000002": "debian",
		"00000000-0000-0000-0000-000000000003": "debian", // deleted
		"00000000-0000-0000-0000-000000000004": "debian", // another owner
		"00000000-0000-0000-0000-000000000005": "alpine-000000000005",
		"00000000-0000-0000-0000-000000000006": "alpine",
	}
	for id, name := range want {
		var got string
		if err := pool.QueryRow(ctx, `SELECT name FROM images WHERE id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != name {
			t.Errorf("image %s is named %q, want %q", id, got, name)
		}
	}
	if err := exec(img("00000000-0000-0000-0000-000000000007", "alpine", tenantID, "2026-04-01", "NULL")); err == nil {
		t.Error("a second live alpine of the same tenant was written")
	}
	if err := exec(img("00000000-0000-0000-0000-000000000008", "alpine", "NULL", "2026-04-01", "NULL")); err != nil {
		t.Errorf("a public alpine beside the tenant's: %v", err)
	}
}
