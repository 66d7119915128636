package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

func (a *app) sandboxCmd() *cobra.Command {
	cmd := group("sandbox", "Create, list, extend, pause, resume, snapshot and delete sandboxes",
		a.sandboxCreateCmd(), a.sandboxListCmd(), a.sandboxGetCmd(), a.sandboxExtendCmd(), a.sandboxSnapshotCmd(),
		setCmd("pause", "Pause a running sandbox", client.InstanceStatePaused, a,
			func(ctx context.Context, api *client.Client, id string) (client.SandboxFields, error) {
				out, err := client.PauseSandbox(ctx, api, id)
				if err != nil {
					return client.SandboxFields{}, err
				}
				return out.PauseSandbox.Sandbox.SandboxFields, nil
			}, a.showSandbox),
		setCmd("resume", "Resume a paused sandbox", client.InstanceStateRunning, a,
			func(ctx context.Context, api *client.Client, id string) (client.SandboxFields, error) {
				out, err := client.ResumeSandbox(ctx, api, id)
				if err != nil {
					return client.SandboxFields{}, err
				}
				return out.ResumeSandbox.Sandbox.SandboxFields, nil
			}, a.showSandbox),
		setCmd("delete", "Delete a sandbox", client.InstanceStateDeleted, a,
			func(ctx context.Context, api *client.Client, id string) (client.SandboxFields, error) {
				out, err := client.DeleteSandbox(ctx, api, id)
				if err != nil {
					return client.SandboxFields{}, err
				}
				return out.DeleteSandbox.Sandbox.SandboxFields, nil
			}, a.showSandbox))
	cmd.Aliases = []string{"sandboxes"}
	return cmd
}

func (a *app) sandboxCreateCmd() *cobra.Command {
	var (
		in       client.CreateSandboxInput
		template string
		snapshot string
		timeout  time.Duration
		w        waitFlags
	)
	cmd := &cobra.Command{
		Use:   "create --template ID | --from-snapshot ID",
		Short: "Create a sandbox from a template, or restore one from a snapshot",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (template == "") == (snapshot == "") {
				return usageError{fmt.Errorf("give --template or --from-snapshot")}
			}
			api, err := a.api()
			if err != nil {
				return err
			}
			if template != "" {
				in.TemplateId = &template
			} else {
				in.FromSnapshot = &snapshot
			}
			in.Timeout = seconds(timeout)
			out, err := client.CreateSandbox(cmd.Context(), api, in)
			if err != nil {
				return err
			}
			return a.showSandbox(cmd.Context(), api, out.CreateSandbox.Sandbox.SandboxFields, client.InstanceStateRunning, w)
		},
	}
	cmd.Flags().StringVar(&template, "template", "", "the template's ID")
	cmd.Flags().StringVar(&snapshot, "from-snapshot", "", "a READY snapshot's ID to restore")
	cmd.Flags().DurationVar(&timeout, "timeout-in", 0, "how long it lives (default: the template's)")
	w.add(cmd)
	return cmd
}

func (a *app) sandboxListCmd() *cobra.Command {
	return listCmd(a, "List sandboxes", sandboxHeader, sandboxRow,
		func(ctx context.Context, api *client.Client, first int, after *string) ([]client.SandboxFields, client.PageFields, error) {
			out, err := client.ListSandboxes(ctx, api, &first, after, nil)
			if err != nil {
				return nil, client.PageFields{}, err
			}
			return out.Sandboxes.Nodes, out.Sandboxes.PageInfo, nil
		})
}

func (a *app) sandboxGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a sandbox",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.GetSandbox(cmd.Context(), api, as[0])
			if err != nil {
				return err
			}
			return show(a.stdout, a.output, out.Sandbox.SandboxFields, sandboxHeader, [][]string{sandboxRow(out.Sandbox.SandboxFields)})
		},
	}
}

func (a *app) sandboxExtendCmd() *cobra.Command {
	var by time.Duration
	cmd := &cobra.Command{
		Use:   "extend ID --timeout-in DURATION",
		Short: "Set when a sandbox expires: DURATION from now (at most its template's maxTimeout)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			if by <= 0 {
				return usageError{fmt.Errorf("--timeout-in must be more than 0")}
			}
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.SetSandboxTimeout(cmd.Context(), api, as[0], *seconds(by))
			if err != nil {
				return err
			}
			return show(a.stdout, a.output, out.SetSandboxTimeout.Sandbox.SandboxFields, sandboxHeader,
				[][]string{sandboxRow(out.SetSandboxTimeout.Sandbox.SandboxFields)})
		},
	}
	cmd.Flags().DurationVar(&by, "timeout-in", 0, "how long from now it lives (required)")
	cmd.MarkFlagRequired("timeout-in")
	return cmd
}

func (a *app) sandboxSnapshotCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot ID NAME",
		Short: "Take a snapshot of a sandbox's disk (it is PENDING until its host has taken it)",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.CreateSandboxSnapshot(cmd.Context(), api, as[0], as[1])
			if err != nil {
				return err
			}
			s := out.CreateSandboxSnapshot.SandboxSnapshot.SnapshotFields
			return show(a.stdout, a.output, s, snapshotHeader, [][]string{snapshotRow(s)})
		},
	}
}

// showSandbox prints sbx; with --wait it first waits for its instance to
// be in want, showing each state, then reads the sandbox again.
func (a *app) showSandbox(ctx context.Context, api *client.Client, sbx client.SandboxFields, want client.InstanceState, w waitFlags) error {
	if w.wait {
		if _, err := a.waitInstance(ctx, api, sbx.Instance.Id, sbx.Id, sbx.Instance.State, want, w.timeout); err != nil {
			return err
		}
		out, err := client.GetSandbox(ctx, api, sbx.Id)
		if err != nil {
			return err
		}
		sbx = out.Sandbox.SandboxFields
	}
	return show(a.stdout, a.output, sbx, sandboxHeader, [][]string{sandboxRow(sbx)})
}

var sandboxHeader = []string{"ID", "STATE", "TEMPLATE", "STARTED", "EXPIRES", "ADDRESSES", "REASON"}

func sandboxRow(s client.SandboxFields) []string {
	return []string{s.Id, string(s.State), s.Template.Name, string(s.StartedFrom), s.ExpiresAt.Local().Format(time.RFC3339),
		orDash(joinComma(s.Instance.Addresses)), orDash(deref(s.Instance.StateReason))}
}
