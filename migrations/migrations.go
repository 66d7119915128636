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
// in order. An embedded vps migration numbered as one of these has its name
// (TestVPSNames); each number not embedded yet is kept for the issue that
// adds what the document says it adds, and a migration of ours beyond the
// list takes the next number after it (0013 on). Since a kept number may
// arrive after later ones were applied, the vps migrations apply out of
// order: a database at 0013 gets a new 0005 applied, not refused.
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

// UnknownVersionError says a module's version table records a migration
// this binary does not have: the database was migrated by another build (a
// newer one, another branch, or one from before the vps migrations were
// renumbered). Up and Current refuse such a database and change nothing.
type UnknownVersionError struct {
	Module  string
	Version int64
	// From says where the version came from: "from a migration this
	// binary does not have", or which numbering it belongs to.
	From string
}

func (e *UnknownVersionError) Error() string {
	return fmt.Sprintf("schema %s has version %d applied %s: another build of better-compute migrated this database, "+
		"and this one cannot follow its schema; refusing to migrate or serve it (nothing was changed)", e.Module, e.Version, e.From)
}

// Up applies every pending migration. Concurrent callers serialize on a
// Postgres advisory lock. A database with a version this binary does not
// know gets nothing applied: Up returns an *UnknownVersionError.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	return withProviders(ctx, pool, func(name string, p *goose.Provider) error {
		if _, err := p.Up(ctx); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		return nil
	})
}

// Current reports an error naming the first module whose schema is behind
// this binary, or has a version it does not know (*UnknownVersionError), so
// servers refuse to run against a schema that is not theirs.
func Current(ctx context.Context, pool *pgxpool.Pool) error {
	return withProviders(ctx, pool, func(name string, p *goose.Provider) error {
		// Not current < target alone: a kept number applied late sits
		// below the highest version.
		pending, err := p.HasPending(ctx)
		if err != nil {
			return fmt.Errorf("read %s schema version: %w", name, err)
		}
		if pending {
			current, target, err := p.GetVersions(ctx)
			if err != nil {
				return fmt.Errorf("read %s schema version: %w", name, err)
			}
			return fmt.Errorf("schema %s has migrations pending (at version %d, this binary has up to %d): run `better-compute migrate`", name, current, target)
		}
		return nil
	})
}

// withProviders checks that every module's applied versions are ones this
// binary has, then calls fn for each module in order.
func withProviders(ctx context.Context, pool *pgxpool.Pool, fn func(name string, p *goose.Provider) error) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	if err := renumbered(ctx, db); err != nil {
		return err
	}
	providers := make([]*goose.Provider, len(modules))
	for i, name := range modules {
		p, err := newProvider(db, name)
		if err != nil {
			return err
		}
		if err := known(ctx, db, name, p); err != nil {
			return err
		}
		providers[i] = p
	}
	for i, name := range modules {
		if err := fn(name, providers[i]); err != nil {
			return err
		}
	}
	return nil
}

// known returns an *UnknownVersionError for the lowest version in module
// name's version table that none of its embedded migrations has.
func known(ctx context.Context, db *sql.DB, name string, p *goose.Provider) error {
	have := map[int64]bool{}
	for _, s := range p.ListSources() {
		have[s.Version] = true
	}
	applied, err := appliedVersions(ctx, db, name)
	if err != nil {
		return err
	}
	for _, v := range applied {
		if !have[v] {
			return &UnknownVersionError{Module: name, Version: v, From: "from a migration this binary does not have"}
		}
	}
	return nil
}

// appliedVersions lists the versions in module name's goose table, lowest
// first, leaving out goose's own version 0; none when there is no table.
func appliedVersions(ctx context.Context, db *sql.DB, name string) ([]int64, error) {
	table := "goose_" + name
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return nil, fmt.Errorf("look up %s: %w", table, err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT version_id FROM "+table+" WHERE version_id > 0 ORDER BY 1")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read %s: %w", table, err)
		}
		versions = append(versions, v)
	}
	return versions, rows.Err()
}

// renumbered returns an *UnknownVersionError for a database migrated with
// the vps migrations as numbered before 0003_placement, 0004_provider_mappings
// and 0005_provider_instances were folded into 0001_instances. Its versions
// cannot always tell (at the old 0002, or once the new 0003–0005 exist), but
// its instances table can: the old 0001 made it without spec_power, which
// the old 0003 added after 0002 had added user_data_sealed, where the new
// 0001 makes spec_power before 0002 runs.
func renumbered(ctx context.Context, db *sql.DB) error {
	applied, err := appliedVersions(ctx, db, "vps")
	if err != nil || len(applied) == 0 {
		return err
	}
	var spec, sealed sql.NullInt64
	err = db.QueryRowContext(ctx, `SELECT
		(SELECT attnum FROM pg_attribute WHERE attrelid = to_regclass('instances') AND attname = 'spec_power' AND NOT attisdropped),
		(SELECT attnum FROM pg_attribute WHERE attrelid = to_regclass('instances') AND attname = 'user_data_sealed' AND NOT attisdropped)`).Scan(&spec, &sealed)
	if err != nil {
		return fmt.Errorf("read the instances table: %w", err)
	}
	top := applied[len(applied)-1]
	// Through version 2 the new numbering always has spec_power; later,
	// the two columns keep the order their migrations gave them.
	if (!spec.Valid && top <= 2) || (spec.Valid && sealed.Valid && sealed.Int64 < spec.Int64) {
		return &UnknownVersionError{Module: "vps", Version: top, From: "from the vps migrations as numbered before " +
			"0003_placement, 0004_provider_mappings and 0005_provider_instances were folded into 0001_instances"}
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
		// A kept number (VPSDesign) arrives after later ones were applied.
		goose.WithAllowOutofOrder(true),
	)
	if err != nil {
		return nil, fmt.Errorf("load %s migrations: %w", name, err)
	}
	return p, nil
}
