// Command better-compute is the Better Compute VPS control plane: one binary
// whose subcommands are its processes.
//
// Each subcommand reads one configuration struct of package app, from its
// flags and then from the environment; a malformed value of either stops it
// before it connects to anything. `better-compute <command> --help` lists
// both, from the same tables they are read with.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args, its environment read through lookup, and
// returns the exit code: 0 on success and for help, 2 for a command line
// that does not parse, 1 for any other failure.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			return run(ctx, []string{args[1], "--help"}, lookup, stdout, stderr)
		}
		printUsage(stdout)
		return 0
	case "version", "-version", "--version":
		printVersion(stdout)
		return 0
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "better-compute: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	err := c.configure(args[1:], lookup, stdout)
	if err == nil {
		err = c.run(ctx)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		report(stderr, c.name, err)
		fmt.Fprintf(stderr, "better-compute %s --help lists its flags.\n", c.name)
		return 2
	default:
		report(stderr, c.name, err)
		return 1
	}
}

// report writes err, each of its lines prefixed with the command, as
// errors.Join puts each joined error on a line of its own.
func report(w io.Writer, name string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "better-compute %s: %s\n", name, line)
	}
}
