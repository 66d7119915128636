package main

import (
	"context"
	"fmt"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/seal"
)

// runReseal seals every stored secret again under BC_SECRET, opening with
// BC_SECRET_PREVIOUS, so the previous secrets can then be dropped.
func runReseal(ctx context.Context, args []string) error {
	cfg := app.FromEnv()
	if len(cfg.Secrets) == 0 {
		return fmt.Errorf("BC_SECRET is not set: it is the secret values are sealed again with")
	}
	sealer, err := seal.New(cfg.Secrets...)
	if err != nil {
		return err
	}
	db, err := app.OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx = iam.WithPrincipal(audit.WithRequestID(ctx, "reseal"), control.System)
	out, err := control.New(db, control.Config{Sealer: sealer}).Reseal(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("sealed again: %d user data, %d provider credentials\n", out.UserData, out.Credentials)
	for _, f := range out.Failed {
		fmt.Printf("could not open: %s\n", f)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("%d values open with none of the configured secrets: keep the secrets that sealed them", len(out.Failed))
	}
	return nil
}
