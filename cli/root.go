// Package cli is bcctl, the command line of the Better Compute API for
// tenants and operators: contexts (an endpoint and a token each), and
// commands over the typed client (package client) for instances,
// sandboxes, templates, snapshots, usage and live events. cobra adds
// `bcctl completion bash|zsh|fish|powershell`.
package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
	"github.com/better-compute/vps/internal/version"
)

// Run runs bcctl with args and returns its exit code (exit.go). getenv
// reads the environment: BC_ENDPOINT, BC_TOKEN and BC_CONTEXT choose the
// API over the saved contexts, BC_CONFIG where they are saved.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv}
	root := a.root()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	// cobra's own refusals of a command line are plain errors.
	if err != nil && (strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "required flag")) {
		err = usageError{err}
	}
	if err != nil {
		fmt.Fprintf(stderr, "bcctl: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return exitCode(err)
}

// app is one run's flags and streams.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string

	context  string // --context
	endpoint string // --endpoint
	token    string // --token
	output   string // -o
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "bcctl",
		Short:         "The Better Compute API from the command line",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       versionLine(),
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if !slices.Contains(formats, a.output) {
				return usageError{fmt.Errorf("-o %q: one of %s", a.output, strings.Join(formats, ", "))}
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	f := root.PersistentFlags()
	f.StringVar(&a.context, "context", "", "the saved context to use (default: the current one, or BC_CONTEXT)")
	f.StringVar(&a.endpoint, "endpoint", "", "the API's /graphql URL, over the context's (or BC_ENDPOINT)")
	f.StringVar(&a.token, "token", "", "the token to call with, over the context's (or BC_TOKEN)")
	f.StringVarP(&a.output, "output", "o", "table", "output format: table, json or yaml")
	root.AddCommand(a.loginCmd(), a.contextCmd(), a.poolCmd(), a.flavorCmd(), a.imageCmd(), a.instanceCmd(),
		a.sandboxCmd(), a.templateCmd(), a.snapshotCmd(), a.eventsCmd(), a.usageCmd())
	return root
}

// group is a command of subcommands: run bare, it shows its help; with
// anything else, it is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, as []string) error {
			if len(as) == 0 {
				return cmd.Help()
			}
			return usageError{fmt.Errorf("unknown command %q for %q", as[0], cmd.CommandPath())}
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

// versionLine is what --version says: the build's version and commit.
func versionLine() string {
	v, commit := version.Get()
	return fmt.Sprintf("%s (commit %s, %s)", v, commit, runtime.Version())
}

// args wraps a positional-argument check so that a wrong count is a usage
// error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, as []string) error {
		if err := check(cmd, as); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// api is the client of the API the flags, the environment or the saved
// context name, in that order.
func (a *app) api() (*client.Client, error) {
	endpoint, token := a.endpoint, a.token
	if endpoint == "" {
		endpoint = a.getenv("BC_ENDPOINT")
	}
	if token == "" {
		token = a.getenv("BC_TOKEN")
	}
	if endpoint == "" || token == "" {
		cfg, _, err := a.config()
		if err != nil {
			return nil, err
		}
		name := a.contextName(cfg)
		saved, ok := cfg.Contexts[name]
		if !ok {
			if name != "" {
				return nil, fmt.Errorf("no context %q (bcctl context list): %w", name, errNoContext)
			}
			return nil, errNoContext
		}
		if endpoint == "" {
			endpoint = saved.Endpoint
		}
		if token == "" {
			token = saved.Token
		}
	}
	return client.New(endpoint, token, nil), nil
}

// contextName is the context asked for: --context, BC_CONTEXT, or the
// current one.
func (a *app) contextName(cfg config) string {
	switch {
	case a.context != "":
		return a.context
	case a.getenv("BC_CONTEXT") != "":
		return a.getenv("BC_CONTEXT")
	}
	return cfg.Current
}

// config reads the saved contexts and says where they are.
func (a *app) config() (config, string, error) {
	path, err := configPath(a.getenv)
	if err != nil {
		return config{}, "", err
	}
	cfg, err := loadConfig(path)
	return cfg, path, err
}
