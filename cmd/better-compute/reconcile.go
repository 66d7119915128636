package main

import (
	"context"

	"github.com/better-compute/vps/app"
)

func reconcileCommand() command {
	cfg := new(app.ReconcilerConfig)
	return command{
		name:    "reconcile",
		summary: "consume the work stream and converge instances",
		config:  cfg,
		run:     func(ctx context.Context) error { return app.RunReconciler(ctx, *cfg) },
	}
}
