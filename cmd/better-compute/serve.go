package main

import (
	"context"

	"github.com/better-compute/vps/app"
)

func serveCommand() command {
	cfg := new(app.Config)
	return command{
		name:    "serve",
		summary: "serve the GraphQL API, the web console, the host gateway and /metrics",
		config:  cfg,
		run:     func(ctx context.Context) error { return runServe(ctx, cfg) },
	}
}

func runServe(ctx context.Context, cfg *app.Config) error {
	cfg.Logger = app.NewLogger(cfg.LogLevel)
	srv, err := app.Start(ctx, *cfg)
	if err != nil {
		return err
	}
	cfg.Logger.Info("serving", "addr", srv.Addr, "host_addr", srv.HostAddr)
	return srv.Wait(ctx)
}
