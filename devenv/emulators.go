package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/drivers/cloud/proxmox/proxmoxtest"
)

// StartEmulators serves the Hetzner Cloud and Proxmox VE emulators on the
// given loopback addresses until ctx ends. Their state lives in memory: a
// restart of dev forgets their servers, and instances on them go LOST.
func StartEmulators(ctx context.Context, log *slog.Logger, hetznerAddr, proxmoxAddr string) (Emulated, error) {
	e := Emulated{HetznerToken: hetznertest.DefaultToken, ProxmoxToken: proxmoxtest.DefaultTokenID + "=" + proxmoxtest.DefaultSecret,
		ProxmoxTemplate: proxmoxtest.DefaultTemplate}
	// Slow enough to watch an instance go through its states.
	hz := hetznertest.New(hetznertest.Config{ActionDuration: time.Second})
	px := proxmoxtest.New(proxmoxtest.Config{TaskDuration: time.Second})
	for _, s := range []struct {
		addr, path string
		h          http.Handler
		url        *string
	}{
		{hetznerAddr, "/v1", hz.Handler(), &e.HetznerURL},
		{proxmoxAddr, "/api2/json", px.Handler(), &e.ProxmoxURL},
	} {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			return e, fmt.Errorf("listen for an emulator on %s: %w", s.addr, err)
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
