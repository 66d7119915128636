package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
)

type simInfo struct {
	member, pool, flavor, image string
}

// startSim seeds the demo, then runs a reconciler and n simulated hosts in
// this process. The hosts speak the real protocol to the server over HTTP;
// rc configures the reconciler.
func startSim(ctx context.Context, rc app.ReconcilerConfig, srv *app.Server, n int, stateDir string, log *slog.Logger) (simInfo, error) {
	sim, err := devenv.Seed(ctx, srv.Service, n)
	if err != nil {
		return simInfo{}, err
	}
	member, _, err := remembered(filepath.Join(stateDir, "member-token"), func() string {
		t, err := devenv.MemberToken(ctx, srv.Service, sim)
		if err != nil {
			log.Error("make demo member token", "err", err)
		}
		return t
	})
	if err != nil {
		return simInfo{}, err
	}
	info := simInfo{member: member, pool: ids.Encode(ids.Pool, sim.Pool), flavor: ids.Encode(ids.Flavor, sim.Flavor), image: ids.Encode(ids.Image, sim.Image)}
	go func() {
		rc.RescanInterval, rc.SweepInterval = 2*time.Second, 2*time.Second
		err := app.RunReconciler(ctx, rc)
		if err != nil {
			log.Error("reconciler stopped", "err", err)
		}
	}()
	for name, cred := range sim.Credentials {
		// Each simulated host keeps its journal and snapshots under the
		// dev state dir, so that dev --sim can snapshot and restore. Its
		// boots and snapshots take a moment, as a real host's do, so that
		// the console shows them STARTING and PENDING.
		hostDir := filepath.Join(stateDir, "hosts", name)
		h := fake.New(fake.Config{BootDelay: 500 * time.Millisecond, SnapshotDelay: time.Second, StateDir: hostDir})
		d := hostd.New(hostd.Config{
			ServerURL: "http://" + srv.Addr, Credential: cred, Runtime: h, RuntimeName: vps.RuntimeFake,
			HeartbeatInterval: 2 * time.Second, Logger: log.With("host", name), StateDir: hostDir,
		})
		go func() {
			defer h.Close()
			if err := d.Run(ctx); err != nil {
				log.Error("simulated host stopped", "host", name, "err", err)
			}
		}()
	}
	return info, nil
}
