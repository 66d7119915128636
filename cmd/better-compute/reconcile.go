package main

import (
	"context"
	"flag"
	"time"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/reconciler"
)

func runReconcile(ctx context.Context, args []string) error {
	cfg := app.ReconcilerConfig{Config: app.FromEnv()}
	fs := flag.NewFlagSet("reconcile", flag.ExitOnError)
	fs.IntVar(&cfg.Workers, "workers", 8, "instances converged at once")
	rescan := fs.Duration("rescan-interval", 10*time.Second, "how often Postgres is scanned for instances not at rest")
	claimIdle := fs.Duration("claim-idle", 30*time.Second, "how long an entry may sit unacknowledged on a consumer before another takes it")
	fs.Parse(args)
	cfg.Tune = func(c *reconciler.Config) {
		c.RescanInterval, c.ClaimIdle = *rescan, *claimIdle
	}
	return app.RunReconciler(ctx, cfg)
}
