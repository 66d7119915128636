package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/migrations"
)

func runDev(ctx context.Context, args []string) error {
	cfg := app.FromEnv()
	fs := flag.NewFlagSet("dev", flag.ExitOnError)
	fs.StringVar(&cfg.Listen, "listen", app.DefaultListen, "HTTP `address` to listen on")
	stateDir := fs.String("state-dir", ".dev", "`directory` for the dev secret, operator token and private Postgres")
	simHosts := fs.Int("sim", 0, "run `N` simulated hosts (fake hypervisors) and a reconciler in-process, with demo data")
	hetznerAddr := fs.String("hetzner-emulator", devenv.DefaultHetznerAddr, "with --sim, serve an emulated Hetzner Cloud API on `address` with a provider pool on it (\"\" for none; the default falls back to a free port when taken)")
	proxmoxAddr := fs.String("proxmox-emulator", devenv.DefaultProxmoxAddr, "with --sim, serve an emulated Proxmox VE API on `address` with a provider pool on it (\"\" for none; the default falls back to a free port when taken)")
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
	fmt.Printf("Better Compute is running.\n\n  Console:         http://%s/\n  GraphQL:         %s\n  Operator token:  %s\n", srv.Addr, url, cfg.BootstrapToken)
	if *simHosts > 0 {
		sim, err := startSim(ctx, cfg, srv, *simHosts, *stateDir, log)
		if err != nil {
			return err
		}
		query := fmt.Sprintf(`mutation { createInstance(input: {poolId: \"%s\", flavorId: \"%s\", imageId: \"%s\", name: \"web-%s\", sshKeys: [\"%s\"]}) { instance { id state } } }`,
			sim.pool, sim.flavor, sim.image, suffix(), demoKey)
		fmt.Printf("  Member token:    %s  (tenant demo)\n\n%d simulated hosts in pool %s. Create an instance as the demo member:\n\n"+
			"  curl -s %s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{\"query\": \"%s\"}'\n",
			sim.member, *simHosts, devenv.SimPool, url, sim.member, query)
		if *hetznerAddr != "" && *proxmoxAddr != "" {
			em, err := devenv.StartEmulators(ctx, log, *hetznerAddr, *proxmoxAddr)
			if err != nil {
				return err
			}
			if err := devenv.SeedProviders(ctx, srv.Service, em); err != nil {
				log.Warn("no emulated provider pools", "err", err)
			} else {
				fmt.Printf("\nEmulated providers: Hetzner Cloud at %s, Proxmox VE at %s.\n"+
					"Provider pools %s and %s serve flavor %s and image %s; create an instance there the same way.\n",
					em.HetznerURL, em.ProxmoxURL, devenv.ProviderPools[control.ProviderHetzner], devenv.ProviderPools[control.ProviderProxmox],
					devenv.CloudFlavor, devenv.CloudImage)
			}
		}
	}
	fmt.Printf("\nPress Ctrl-C to stop.\n")
	return srv.Wait(ctx)
}

// demoKey is a public key for the walk-through; no one holds its private key.
const demoKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl you@laptop"

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

// suffix keeps the walk-through's instance names apart across runs.
func suffix() string {
	b := make([]byte, 2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
