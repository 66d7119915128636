package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/doctor"
)

func doctorCommand() command {
	cfg := new(app.DoctorConfig)
	return command{
		name:    "doctor",
		summary: "list what an operator must look at; exit 1 on any error-level finding",
		config:  cfg,
		run:     func(ctx context.Context) error { return runDoctor(ctx, cfg, os.Stdout) },
	}
}

// runDoctor prints the doctor's findings, as text or JSON, and fails when
// any is of level error.
func runDoctor(ctx context.Context, cfg *app.DoctorConfig, out io.Writer) error {
	findings, err := app.RunDoctor(ctx, *cfg)
	if err != nil {
		return err
	}
	if cfg.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"findings": findings}); err != nil {
			return fmt.Errorf("print findings: %w", err)
		}
	} else {
		printFindings(out, findings)
	}
	if n := doctor.Errors(findings); n > 0 {
		return fmt.Errorf("%d error-level findings", n)
	}
	return nil
}

// printFindings prints each finding as its level, code and objects, then
// its message and remedy, indented.
func printFindings(w io.Writer, findings []doctor.Finding) {
	if len(findings) == 0 {
		fmt.Fprintln(w, "no findings")
		return
	}
	for _, f := range findings {
		fmt.Fprintf(w, "%-7s %s", f.Level, f.Code)
		for _, o := range f.Objects {
			fmt.Fprintf(w, " %s", o)
		}
		fmt.Fprintf(w, "\n        %s\n        what to do: %s\n", f.Message, f.Remedy)
	}
	fmt.Fprintf(w, "%d findings, %d of level error\n", len(findings), doctor.Errors(findings))
}
