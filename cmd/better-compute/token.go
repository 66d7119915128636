package main

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/ids"
)

func tokenCommand() command {
	cfg := new(app.TokenConfig)
	return command{
		name:    "token",
		verb:    "create",
		summary: "create an API token",
		config:  cfg,
		run:     func(ctx context.Context) error { return runToken(ctx, cfg) },
	}
}

func runToken(ctx context.Context, cfg *app.TokenConfig) error {
	in := control.APITokenInput{Name: cfg.Name}
	if cfg.Tenant != "" {
		id, ok := ids.Decode(ids.Tenant, cfg.Tenant)
		if !ok {
			return fmt.Errorf("--tenant %q is not a tenant id", cfg.Tenant)
		}
		in.TenantID = id
	}
	if cfg.Expires > 0 {
		at := time.Now().Add(cfg.Expires)
		in.ExpiresAt = &at
	}
	db, err := app.OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := control.New(db, control.Config{}).IssueToken(ctx, in)
	if err != nil {
		return err
	}
	fmt.Println(out.Secret)
	return nil
}
