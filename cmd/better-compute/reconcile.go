package main

import (
	"context"
	"flag"

	"github.com/better-compute/vps/app"
)

func runReconcile(ctx context.Context, args []string) error {
	cfg := app.ReconcilerConfig{Config: app.FromEnv()}
	fs := flag.NewFlagSet("reconcile", flag.ExitOnError)
	fs.IntVar(&cfg.Workers, "workers", 8, "instances converged at once")
	fs.Parse(args)
	return app.RunReconciler(ctx, cfg)
}
