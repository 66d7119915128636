// Package migrations holds the database schema as goose migrations, embedded
// in the binary. Each module keeps its own set and version table, applied in
// order: platform first, then vps.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Files holds every migration, by module.
//
//go:embed platform/*.sql vps/*.sql
var Files embed.FS

// VPSDesign names the vps module's migrations as the design document does,
// in order. The embedded vps set is a prefix of it (TestVPSNames): each
// number after the last embedded one is kept for the issue that adds what
// the document says it adds, and a migration of ours beyond the list takes
// the next number after it (0013).
var VPSDesign = []string{
	"vps/0001_instances",
	"vps/0002_sealed_user_data",
	"vps/0003_provider_bootstraps",
	"vps/0004_sandboxes",
	"vps/0005_sandbox_snapshots",
	"vps/0006_warm_claims",
	"vps/0007_template_env",
	"vps/0008_template_network",
	"vps/0009_snapshot_fixes",
	"vps/0010_sandbox_metric_indexes",
	"vps/0011_host_certificates",
	"vps/0012_host_cert_validity",
}

// modules lists the migration sets in the order they apply.
var modules = []string{"platform", "vps"}

// Up applies every pending migration. Concurrent callers serialize on a
// Postgres advisory lock.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	return withProviders(pool, func(name string, p *goose.Provider) error {
		if _, err := p.Up(ctx); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		return nil
	})
}

// Current reports an error naming the first module whose schema is behind
// this binary, so servers refuse to run against an old schema.
func Current(ctx context.Context, pool *pgxpool.Pool) error {
	return withProviders(pool, func(name string, p *goose.Provider) error {
		current, target, err := p.GetVersions(ctx)
		if err != nil {
			return fmt.Errorf("read %s schema version: %w", name, err)
		}
		if current < target {
			return fmt.Errorf("schema %s is at version %d, this binary needs %d: run `better-compute migrate`", name, current, target)
		}
		return nil
	})
}

func withProviders(pool *pgxpool.Pool, fn func(name string, p *goose.Provider) error) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, name := range modules {
		p, err := newProvider(db, name)
		if err != nil {
			return err
		}
		if err := fn(name, p); err != nil {
			return err
		}
	}
	return nil
}

func newProvider(db *sql.DB, name string) (*goose.Provider, error) {
	sub, err := fs.Sub(Files, name)
	if err != nil {
		return nil, fmt.Errorf("open %s migrations: %w", name, err)
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("create migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithTableName("goose_"+name),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return nil, fmt.Errorf("load %s migrations: %w", name, err)
	}
	return p, nil
}
