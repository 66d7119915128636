package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/migrations"
)

func runMigrate(ctx context.Context, args []string) error {
	flag.NewFlagSet("migrate", flag.ExitOnError).Parse(args)
	db, err := app.OpenDB(ctx, os.Getenv("DATABASE_URL"))
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
