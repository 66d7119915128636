package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/drivers/runtime/imagecache"
	"github.com/better-compute/vps/drivers/runtime/libvirt"
	"github.com/better-compute/vps/hostd"
)

func hostCommand() command {
	cfg := new(app.HostConfig)
	return command{
		name:    "host",
		summary: "run the host daemon: converge this host's NodeSpec",
		config:  cfg,
		run:     func(ctx context.Context) error { return runHost(ctx, cfg) },
	}
}

func runHost(ctx context.Context, cfg *app.HostConfig) error {
	if err := cfg.Prepare(); err != nil {
		return err
	}
	log := cfg.Logger
	var rt hostd.Runtime
	switch cfg.Runtime {
	case app.RuntimeFake:
		h := fake.New(fake.Config{BootDelay: cfg.FakeBootDelay, StateDir: cfg.StateDir, SnapshotDir: cfg.SnapshotDir, SnapshotDelay: cfg.FakeSnapshotDelay,
			GPUs: cfg.FakeGPUs, KmsgFile: cfg.FakeKmsg, Logger: log})
		defer h.Close()
		if cfg.FakeFailStarts != "" {
			h.FailAllStarts(cfg.FakeFailStarts)
		}
		h.FailSnapshots(cfg.FakeFailSnapshots)
		rt = h
	case app.RuntimeLibvirt:
		images, err := imagecache.New(imagecache.Config{Dir: filepath.Join(cfg.StateDir, "images"), Logger: log})
		if err != nil {
			return err
		}
		r, err := libvirt.New(ctx, libvirt.Config{
			URI: cfg.LibvirtURI, Socket: cfg.LibvirtSocket, DomainType: cfg.DomainType,
			StateDir: cfg.StateDir, SnapshotDir: cfg.SnapshotDir, Bridge: cfg.Bridge, BootTimeout: cfg.BootTimeout, Images: images, Logger: log,
		})
		if err != nil {
			return err
		}
		defer r.Close()
		rt = r
	default:
		return fmt.Errorf("unknown runtime %q", cfg.Runtime)
	}
	return app.RunHost(ctx, *cfg, rt)
}
