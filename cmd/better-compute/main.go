// Command better-compute is the Better Compute VPS control plane: one binary
// whose subcommands are its processes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

var commands = map[string]struct {
	run     func(ctx context.Context, args []string) error
	summary string
}{
	"serve":     {runServe, "serve the GraphQL API, the host gateway and /metrics"},
	"migrate":   {runMigrate, "apply the database migrations"},
	"dev":       {runDev, "run the whole system locally with embedded defaults"},
	"token":     {runToken, "create an API token (token create)"},
	"reconcile": {runReconcile, "consume the work stream and converge instances"},
	"host":      {runHost, "run the host daemon: converge this host's NodeSpec"},
	"reseal":    {runReseal, "seal stored secrets again under BC_SECRET, after a rotation"},
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "better-compute %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: better-compute <command> [flags]\n\ncommands:")
	for _, name := range []string{"serve", "reconcile", "host", "migrate", "dev", "token", "reseal"} {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(os.Stderr, "\nenvironment: DATABASE_URL, REDIS_URL, BC_SECRET, BC_SECRET_PREVIOUS, BC_BOOTSTRAP_TOKEN, BC_ALLOWED_ORIGINS")
}
