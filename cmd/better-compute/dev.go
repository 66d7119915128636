package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

func devCommand() command {
	cfg := new(app.DevConfig)
	return command{
		name:    "dev",
		summary: "run the whole system locally, making what it needs and is not given",
		config:  cfg,
		run:     func(ctx context.Context) error { return runDev(ctx, cfg) },
	}
}

func runDev(ctx context.Context, dev *app.DevConfig) error {
	cfg, stateDir := &dev.Config, dev.StateDir
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: dev.LogLevel}))
	cfg.Logger = log
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}

	// dev's own database holds only demo data: one another build migrated
	// is made again. One named by DATABASE_URL is left as it is.
	ownDatabase := cfg.DatabaseURL == ""
	if ownDatabase {
		url, stop, err := devenv.Postgres(ctx, log, stateDir)
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
	newSecret := false
	if cfg.Secret == "" {
		secret, made, err := remembered(filepath.Join(stateDir, "secret"), func() string { return randomString(32) })
		if err != nil {
			return err
		}
		cfg.Secret, newSecret = secret, made
	}
	if cfg.BootstrapToken == "" {
		token, _, err := remembered(filepath.Join(stateDir, "operator-token"), func() string { t, _ := iam.NewToken(); return t })
		if err != nil {
			return err
		}
		cfg.BootstrapToken = token
	}

	if ownDatabase {
		if err := devenv.Migrate(ctx, log, cfg.DatabaseURL, newSecret); err != nil {
			return err
		}
	} else {
		db, err := app.OpenDB(ctx, cfg.DatabaseURL)
		if err != nil {
			return err
		}
		err = migrations.Up(ctx, db)
		db.Close()
		var unknown *migrations.UnknownVersionError
		if errors.As(err, &unknown) {
			return fmt.Errorf("%w; dev recreates only its own database, not one DATABASE_URL names", err)
		}
		if err != nil {
			return err
		}
	}
	moved, err := dev.HostListener()
	if err != nil {
		return err
	}
	if moved {
		log.Warn("host listener address taken: serving on a free port", "taken", app.DefaultDevHostListen, "addr", cfg.HostListen)
	}
	srv, err := app.Start(ctx, *cfg)
	if err != nil {
		return err
	}
	url := "http://" + srv.Addr + "/graphql"
	fmt.Printf("Better Compute is running.\n\n  Console:         http://%s/\n  GraphQL:         %s\n  API explorer:    %s (in a browser)\n  Operator token:  %s\n", srv.Addr, url, url, cfg.BootstrapToken)
	if srv.HostURL != "" {
		fmt.Printf("  Host listener:   %s  (join commands of createHost name it)\n", srv.HostURL)
	}
	if dev.SimHosts > 0 {
		sim, err := startSim(ctx, dev.Reconciler(), srv, dev.SimHosts, stateDir, log)
		if err != nil {
			return err
		}
		query := fmt.Sprintf(`mutation { createInstance(input: {poolId: \"%s\", flavorId: \"%s\", imageId: \"%s\", name: \"web-%s\", sshKeys: [\"%s\"]}) { instance { id state } } }`,
			sim.pool, sim.flavor, sim.image, suffix(), demoKey)
		fmt.Printf("  Member token:    %s  (tenant demo)\n\n%d simulated hosts in pool %s. Create an instance as the demo member:\n\n"+
			"  curl -s %s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{\"query\": \"%s\"}'\n",
			sim.member, dev.SimHosts, devenv.SimPool, url, sim.member, query)
		if dev.HetznerEmulator != "" && dev.ProxmoxEmulator != "" {
			em, err := devenv.StartEmulators(ctx, log, dev.HetznerEmulator, dev.ProxmoxEmulator)
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
func remembered(path string, gen func() string) (v string, made bool, err error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), false, nil
	}
	v = gen()
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	return v, true, nil
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
