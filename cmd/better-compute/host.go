package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/drivers/runtime/imagecache"
	"github.com/better-compute/vps/drivers/runtime/libvirt"
	"github.com/better-compute/vps/hostd"
)

func runHost(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("host", flag.ExitOnError)
	server := fs.String("server", "http://"+app.DefaultListen, "base `URL` of the server whose host gateway to use")
	runtime := fs.String("runtime", "libvirt", "runtime `driver`: fake (simulated) or libvirt")
	credFile := fs.String("credential-file", "", "`file` holding the host credential (default: $BC_HOST_CREDENTIAL)")
	heartbeat := fs.Duration("heartbeat", 5*time.Second, "longest time between two reports")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "how long a guest has to shut down before it is destroyed")
	bootDelay := fs.Duration("fake-boot-delay", 0, "fake runtime: how long a started domain boots")
	failStarts := fs.String("fake-fail-starts", "", "fake runtime: fail every start with this `reason`")
	var lv libvirt.Config
	fs.StringVar(&lv.URI, "libvirt-uri", "qemu:///system", "libvirt runtime: connection `URI`")
	fs.StringVar(&lv.Socket, "libvirt-socket", "/var/run/libvirt/libvirt-sock", "libvirt runtime: libvirtd's unix `socket`")
	fs.StringVar(&lv.DomainType, "domain-type", "", "libvirt runtime: kvm or qemu (software emulation); default kvm when /dev/kvm exists")
	fs.StringVar(&lv.StateDir, "state-dir", "/var/lib/better-compute", "libvirt runtime: `directory` for images, overlays, seeds and console logs")
	fs.StringVar(&lv.Bridge, "bridge", "", "libvirt runtime: host `bridge` for guest NICs (default: user-mode networking)")
	fs.Parse(args)

	cred := os.Getenv("BC_HOST_CREDENTIAL")
	if *credFile != "" {
		b, err := os.ReadFile(*credFile)
		if err != nil {
			return fmt.Errorf("read credential: %w", err)
		}
		cred = strings.TrimSpace(string(b))
	}
	if cred == "" {
		return errors.New("no host credential: set BC_HOST_CREDENTIAL or --credential-file (createHost returns it)")
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	var rt hostd.Runtime
	switch *runtime {
	case "fake":
		h := fake.New(fake.Config{BootDelay: *bootDelay})
		defer h.Close()
		if *failStarts != "" {
			h.FailAllStarts(*failStarts)
		}
		rt = h
	case "libvirt":
		images, err := imagecache.New(imagecache.Config{Dir: filepath.Join(lv.StateDir, "images"), Logger: log})
		if err != nil {
			return err
		}
		lv.Images, lv.Logger = images, log
		r, err := libvirt.New(ctx, lv)
		if err != nil {
			return err
		}
		defer r.Close()
		rt = r
	default:
		return fmt.Errorf("unknown runtime %q", *runtime)
	}
	return hostd.New(hostd.Config{
		ServerURL: *server, Credential: cred, Runtime: rt, HeartbeatInterval: *heartbeat, ShutdownTimeout: *shutdown, Logger: log,
	}).Run(ctx)
}
