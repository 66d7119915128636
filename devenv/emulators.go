package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/drivers/cloud/proxmox/proxmoxtest"
)

// The emulators' default addresses. When one is taken (another dev runs, or
// anything else listens there), StartEmulators serves that emulator on a
// free port instead.
const (
	DefaultHetznerAddr = "127.0.0.1:8091"
	DefaultProxmoxAddr = "127.0.0.1:8092"
)

// StartEmulators serves the Hetzner Cloud and Proxmox VE emulators on the
// given loopback addresses until ctx ends; Emulated says where they are. A
// default address that is taken falls back to a free port on the same
// host; any other address that is taken is an error. Their state lives in
// memory: a restart of dev forgets their servers, and instances on them go
// LOST.
func StartEmulators(ctx context.Context, log *slog.Logger, hetznerAddr, proxmoxAddr string) (Emulated, error) {
	e := Emulated{HetznerToken: hetznertest.DefaultToken, ProxmoxToken: proxmoxtest.DefaultTokenID + "=" + proxmoxtest.DefaultSecret,
		ProxmoxTemplate: proxmoxtest.DefaultTemplate}
	// Slow enough to watch an instance go through its states.
	hz := hetznertest.New(hetznertest.Config{ActionDuration: time.Second})
	px := proxmoxtest.New(proxmoxtest.Config{TaskDuration: time.Second})
	for _, s := range []struct {
		name, addr, path string
		fallback         bool
		h                http.Handler
		url              *string
	}{
		{"Hetzner Cloud", hetznerAddr, "/v1", hetznerAddr == DefaultHetznerAddr, hz.Handler(), &e.HetznerURL},
		{"Proxmox VE", proxmoxAddr, "/api2/json", proxmoxAddr == DefaultProxmoxAddr, px.Handler(), &e.ProxmoxURL},
	} {
		ln, err := listen(s.addr, s.fallback)
		if err != nil {
			return e, fmt.Errorf("listen for the %s emulator on %s: %w", s.name, s.addr, err)
		}
		if got := ln.Addr().String(); got != s.addr {
			log.Warn("emulator address taken: serving on a free port", "emulator", s.name, "taken", s.addr, "addr", got)
		}
		*s.url = "http://" + ln.Addr().String() + s.path
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("emulator stopped", "addr", ln.Addr().String(), "err", err)
			}
		}()
		context.AfterFunc(ctx, func() { srv.Close() })
	}
	return e, nil
}

// Available returns addr when it can be listened on or, when it is taken,
// a free port of the same host: for a listener another package opens
// next (dev's host listener), so the port may be taken again in between,
// which that listener then reports.
func Available(addr string) (string, error) {
	ln, err := listen(addr, true)
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// listen listens on addr or, with fallback, when addr is taken, on a free
// port of the same host.
func listen(addr string, fallback bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil || !fallback || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	host, _, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		return nil, err
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}
