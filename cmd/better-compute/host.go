package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/drivers/fake"
	"github.com/better-compute/vps/hostd"
)

func runHost(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("host", flag.ExitOnError)
	server := fs.String("server", "http://"+app.DefaultListen, "base `URL` of the server whose host gateway to use")
	runtime := fs.String("runtime", "libvirt", "runtime `driver`: fake (simulated) or libvirt")
	credFile := fs.String("credential-file", "", "`file` holding the host credential (default: $BC_HOST_CREDENTIAL)")
	heartbeat := fs.Duration("heartbeat", 5*time.Second, "longest time between two reports")
	bootDelay := fs.Duration("fake-boot-delay", 0, "fake runtime: how long a started domain boots")
	failStarts := fs.String("fake-fail-starts", "", "fake runtime: fail every start with this `reason`")
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
		return errors.New("the libvirt runtime is not built yet; use --runtime fake")
	default:
		return fmt.Errorf("unknown runtime %q", *runtime)
	}
	return hostd.New(hostd.Config{
		ServerURL: *server, Credential: cred, Runtime: rt, HeartbeatInterval: *heartbeat,
		Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	}).Run(ctx)
}
