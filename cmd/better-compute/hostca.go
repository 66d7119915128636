package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/google/uuid"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/hostca"
)

func hostCACommand() command {
	cfg := new(app.HostCAConfig)
	return command{
		name:    "host-ca",
		summary: "list the host certificate authorities, or rotate (--rotate) or retire (--retire ID) one",
		config:  cfg,
		run:     func(ctx context.Context) error { return runHostCA(ctx, cfg) },
	}
}

// runHostCA rotates or retires a host CA when asked, then lists them all.
func runHostCA(ctx context.Context, cfg *app.HostCAConfig) error {
	if cfg.Rotate && cfg.Retire != "" {
		return errors.New("--rotate and --retire: one at a time")
	}
	sealer, err := cfg.Sealer()
	if err != nil {
		return err
	}
	db, err := app.OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx = audit.WithRequestID(ctx, "host-ca")
	ca := hostca.New(hostca.Config{DB: db, Sealer: sealer})
	switch {
	case cfg.Rotate:
		made, err := ca.Rotate(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("made host CA %s (sha256 %s): it signs host certificates from now on; retire the older ones once every host renewed\n", made.ID, made.Fingerprint())
	case cfg.Retire != "":
		id, err := uuid.Parse(cfg.Retire)
		if err != nil {
			return fmt.Errorf("--retire %q is not a CA id", cfg.Retire)
		}
		if err := ca.Retire(ctx, id); err != nil {
			return err
		}
		fmt.Printf("retired host CA %s: its certificates are refused\n", id)
	}
	all, err := ca.List(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tMADE\tEXPIRES\tSHA256\tROLE")
	live := 0
	for _, c := range all {
		if c.RetiredAt == nil {
			live++
		}
	}
	seen := 0
	for _, c := range all {
		var role string
		if c.RetiredAt != nil {
			role = "retired " + c.RetiredAt.UTC().Format("2006-01-02 15:04")
		} else {
			seen++
			switch {
			case seen == live && seen == 1:
				role = "trusted, signs host and server certificates"
			case seen == live:
				role = "trusted, signs host certificates"
			case seen == 1:
				role = "trusted, signs the server certificate"
			default:
				role = "trusted"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.CreatedAt.UTC().Format("2006-01-02 15:04"), c.Cert.NotAfter.UTC().Format("2006-01-02"), c.Fingerprint(), role)
	}
	return w.Flush()
}
