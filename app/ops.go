package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/server"
)

// NewLogger returns a process log: JSON to stderr, from level up.
func NewLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// logLevel declares BC_LOG_LEVEL, the level every process logs from.
func logLevel(p *slog.Level) conf.Var {
	return conf.Func("BC_LOG_LEVEL", "INFO", "least level logged: DEBUG, INFO, WARN or ERROR; wins over --log-level", func(s string) error {
		if err := p.UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("%q is not a level (DEBUG, INFO, WARN, ERROR)", s)
		}
		return nil
	})
}

// logLevelFlag defines --log-level on fs, bound to *p.
func logLevelFlag(fs *flag.FlagSet, p *slog.Level) {
	fs.TextVar(p, "log-level", slog.LevelInfo, "least `level` logged: DEBUG, INFO, WARN or ERROR")
}

// profiles declares BC_PPROF, which serves the Go runtime's profiles beside
// /metrics.
func profiles(p *bool) conf.Var {
	return conf.Bool(p, "BC_PPROF", false, "serve the Go runtime's profiles at /debug/pprof/ beside /metrics (CPU, heap, goroutine); they show the process's internals")
}

// metricsListenFlag defines --metrics-listen on fs, bound to *p.
func metricsListenFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "metrics-listen", "", "HTTP `address` serving /metrics, /healthz and /readyz; empty: none")
}

// opsServer serves /metrics, /healthz and /readyz of a process without an
// API: reconcile and host.
type opsServer struct {
	http *http.Server
	done chan error
}

// startOps serves reg's metrics and ready's verdict on addr, and the
// runtime's profiles when profiles is, in the background; it logs the address it listens on (port 0 picks one).
func startOps(addr string, profiles bool, reg *prometheus.Registry, ready func(context.Context) error, log *slog.Logger) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for metrics: %w", addr, err)
	}
	mux := http.NewServeMux()
	server.HandleOps(mux, reg, ready, log)
	if profiles {
		server.HandleProfiles(mux)
	}
	s := &opsServer{
		http: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		done: make(chan error, 1),
	}
	go func() { s.done <- s.http.Serve(ln) }()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return s, nil
}

// stop shuts the server down and waits for it.
func (s *opsServer) stop() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// withOps runs run with the ops server of addr beside it, when addr is set,
// with the runtime's profiles when profiles is.
func withOps(addr string, profiles bool, reg *prometheus.Registry, ready func(context.Context) error, log *slog.Logger, run func() error) error {
	if strings.TrimSpace(addr) == "" {
		return run()
	}
	ops, err := startOps(addr, profiles, reg, ready, log)
	if err != nil {
		return err
	}
	err = run()
	return errors.Join(err, ops.stop())
}
