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
	sweep := fs.Duration("sweep-interval", 10*time.Second, "how often each provider account's servers are listed, by all reconcilers together")
	grace := fs.Duration("orphan-grace", 10*time.Minute, "how long a server with our label and no live instance lives before it is deleted")
	fs.DurationVar(&cfg.Drivers.PollInterval, "provider-poll", 500*time.Millisecond, "how often provider actions and tasks are polled")
	fs.DurationVar(&cfg.Drivers.Timeout, "provider-timeout", 30*time.Second, "how long one request to a provider may take")
	fs.DurationVar(&cfg.Drivers.ShutdownTimeout, "shutdown-timeout", time.Minute, "how long a provider server may take to shut down before it is powered off")
	fs.Parse(args)
	cfg.Tune = func(c *reconciler.Config) {
		c.RescanInterval, c.ClaimIdle = *rescan, *claimIdle
		c.SweepInterval, c.OrphanGrace = *sweep, *grace
	}
	return app.RunReconciler(ctx, cfg)
}
