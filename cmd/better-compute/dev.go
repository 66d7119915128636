package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/migrations"
)

func runDev(ctx context.Context, args []string) error {
	cfg := app.FromEnv()
	fs := flag.NewFlagSet("dev", flag.ExitOnError)
	fs.StringVar(&cfg.Listen, "listen", app.DefaultListen, "HTTP `address` to listen on")
	stateDir := fs.String("state-dir", ".dev", "`directory` for the dev secret, operator token and private Postgres")
	fs.Parse(args)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Logger = log
	if err := os.MkdirAll(*stateDir, 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}

	if cfg.DatabaseURL == "" {
		url, stop, err := devenv.Postgres(ctx, log, *stateDir)
		if err != nil {
			return err
		}
		defer stop()
		cfg.DatabaseURL = url
	}
	if cfg.RedisURL == "" {
		url, stop, err := devenv.Redis()
		if err != nil {
			return err
		}
		defer stop()
		cfg.RedisURL = url
	}
	if len(cfg.Secrets) == 0 {
		secret, err := remembered(filepath.Join(*stateDir, "secret"), func() string { return randomString(32) })
		if err != nil {
			return err
		}
		cfg.Secrets = []string{secret}
	}
	if cfg.BootstrapToken == "" {
		token, err := remembered(filepath.Join(*stateDir, "operator-token"), func() string { t, _ := iam.NewToken(); return t })
		if err != nil {
			return err
		}
		cfg.BootstrapToken = token
	}

	db, err := app.OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	err = migrations.Up(ctx, db)
	db.Close()
	if err != nil {
		return err
	}
	srv, err := app.Start(ctx, cfg)
	if err != nil {
		return err
	}
	url := "http://" + srv.Addr + "/graphql"
	fmt.Printf(`Better Compute is running.

  GraphQL:         %s
  Operator token:  %s

Try it:
  curl -s %s \
    -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
    -d '{"query":"{ viewer { principal { name role } } }"}'

Press Ctrl-C to stop.
`, url, cfg.BootstrapToken, url, cfg.BootstrapToken)
	return srv.Wait(ctx)
}

// remembered returns the value kept in path, creating it with gen the first
// time, so dev keeps its secret and token across restarts.
func remembered(path string, gen func() string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	v := gen()
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return v, nil
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
