package main

import (
	"context"
	"fmt"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
)

func resealCommand() command {
	cfg := new(app.ResealConfig)
	return command{
		name:    "reseal",
		summary: "seal stored secrets again under BC_SECRET, after a rotation",
		config:  cfg,
		run:     func(ctx context.Context) error { return runReseal(ctx, cfg) },
	}
}

// runReseal seals every stored secret again under BC_SECRET, opening with
// BC_SECRET_PREVIOUS, so the previous secrets can then be dropped.
func runReseal(ctx context.Context, cfg *app.ResealConfig) error {
	sealer, err := cfg.Sealer()
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
	fmt.Printf("sealed again: %d user data, %d provider credentials, %d host CA keys\n", out.UserData, out.Credentials, out.HostCAKeys)
	for _, f := range out.Failed {
		fmt.Printf("could not open: %s\n", f)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("%d values open with none of the configured secrets: keep the secrets that sealed them", len(out.Failed))
	}
	return nil
}
