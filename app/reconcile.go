package app

import (
	"context"

	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/seal"
)

// ReconcilerConfig is what `reconcile` adds to Config.
type ReconcilerConfig struct {
	Config
	// Workers is how many instances converge at once. Default 8.
	Workers int
	// Drivers tune the provider drivers.
	Drivers DriverOptions
	// Tune, if set, adjusts the reconciler's configuration (tests and dev
	// use it for shorter intervals).
	Tune func(*reconciler.Config)
}

// RunReconciler runs a reconciler until ctx ends.
func RunReconciler(ctx context.Context, cfg ReconcilerConfig) error {
	cfg.applyDefaults()
	rdb, err := OpenRedis(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	db, err := OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	var sealer *seal.Sealer // without BC_SECRET, provider pools wait
	if len(cfg.Secrets) > 0 {
		if sealer, err = seal.New(cfg.Secrets...); err != nil {
			return err
		}
	}
	rc := reconciler.Config{
		DB: db, Redis: rdb, Prefix: cfg.RedisPrefix, Workers: cfg.Workers,
		HostSilentAfter: cfg.HostSilentAfter, Logger: cfg.Logger,
		Sealer: sealer, Drivers: Drivers(cfg.Drivers),
	}
	if cfg.Tune != nil {
		cfg.Tune(&rc)
	}
	return reconciler.New(rc).Run(ctx)
}
