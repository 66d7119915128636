// Command bcctl is the Better Compute API's command line (package cli).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/better-compute/vps/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
