package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/better-compute/vps/app"
)

func runServe(ctx context.Context, args []string) error {
	cfg := app.FromEnv()
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	fs.StringVar(&cfg.Listen, "listen", app.DefaultListen, "HTTP `address` to listen on")
	fs.Parse(args)
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	srv, err := app.Start(ctx, cfg)
	if err != nil {
		return err
	}
	cfg.Logger.Info("serving", "addr", srv.Addr)
	return srv.Wait(ctx)
}
