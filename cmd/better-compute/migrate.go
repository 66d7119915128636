package main

import (
	"context"
	"fmt"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/migrations"
)

func migrateCommand() command {
	cfg := new(app.MigrateConfig)
	return command{
		name:    "migrate",
		summary: "apply the database migrations",
		config:  cfg,
		run:     func(ctx context.Context) error { return runMigrate(ctx, cfg) },
	}
}

func runMigrate(ctx context.Context, cfg *app.MigrateConfig) error {
	db, err := app.OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := migrations.Up(ctx, db); err != nil {
		return err
	}
	fmt.Println("schema is current")
	return nil
}
