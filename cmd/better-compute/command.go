package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/better-compute/vps/internal/conf"
)

// settings is a subcommand's configuration struct: the environment
// variables it reads and its flags, both bound to its fields.
type settings interface {
	// Env is the table the environment is read from and --help lists.
	Env() []conf.Var
	// Flags defines the flags on fs.
	Flags(fs *flag.FlagSet)
}

// A command is a subcommand of better-compute.
type command struct {
	// name selects it: better-compute <name>.
	name string
	// verb, if set, must follow the name, as in `token create`.
	verb string
	// summary says what it does, in a line.
	summary string
	// config is read from the flags and the environment before run.
	config settings
	// run does the command's work.
	run func(ctx context.Context) error
}

// commands returns the subcommands, in the order help lists them, each
// with a configuration of its own.
func commands() []command {
	return []command{
		serveCommand(), reconcileCommand(), hostCommand(), migrateCommand(),
		devCommand(), tokenCommand(), resealCommand(), hostCACommand(), doctorCommand(),
	}
}

// findCommand returns the subcommand called name.
func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageError is a command line that does not parse. It exits 2, as
// package flag's ExitOnError does.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// configure reads c's configuration: its flags from args, then its
// environment variables through lookup. Asked for help (-h, --help), it
// prints c's help to stdout and returns flag.ErrHelp.
func (c command) configure(args []string, lookup func(string) (string, bool), stdout io.Writer) error {
	hasVerb := c.verb == "" || len(args) > 0 && args[0] == c.verb
	if c.verb != "" && hasVerb {
		args = args[1:]
	}
	fs := c.flagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printHelp(stdout)
			return err
		}
		return usageError{err}
	}
	if !hasVerb {
		return usageError{fmt.Errorf("%s needs %q: better-compute %s %s [flags]", c.name, c.verb, c.name, c.verb)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return conf.Read(c.config.Env(), lookup)
}

// flagSet returns a FlagSet with c's flags, which reports what fails to
// parse without printing anything. Defining the flags sets c's fields to
// the flags' defaults.
func (c command) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	c.config.Flags(fs)
	return fs
}
