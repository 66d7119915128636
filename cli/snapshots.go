package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

func (a *app) snapshotCmd() *cobra.Command {
	var sandbox string
	list := listCmd(a, "List sandbox snapshots", snapshotHeader, snapshotRow,
		func(ctx context.Context, api *client.Client, first int, after *string) ([]client.SnapshotFields, client.PageFields, error) {
			var filter *client.SandboxSnapshotFilter
			if sandbox != "" {
				filter = &client.SandboxSnapshotFilter{SandboxId: &sandbox}
			}
			out, err := client.ListSandboxSnapshots(ctx, api, &first, after, filter)
			if err != nil {
				return nil, client.PageFields{}, err
			}
			return out.SandboxSnapshots.Nodes, out.SandboxSnapshots.PageInfo, nil
		})
	list.Flags().StringVar(&sandbox, "sandbox", "", "only the snapshots of this sandbox")
	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show a snapshot",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.GetSandboxSnapshot(cmd.Context(), api, as[0])
			if err != nil {
				return err
			}
			s := out.SandboxSnapshot.SnapshotFields
			return show(a.stdout, a.output, s, snapshotHeader, [][]string{snapshotRow(s)})
		},
	}
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a snapshot",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.DeleteSandboxSnapshot(cmd.Context(), api, as[0])
			if err != nil {
				return err
			}
			s := out.DeleteSandboxSnapshot.SandboxSnapshot.SnapshotFields
			return show(a.stdout, a.output, s, snapshotHeader, [][]string{snapshotRow(s)})
		},
	}
	cmd := group("snapshot", "List, show and delete sandbox snapshots (take one with `bcctl sandbox snapshot`)", list, get, del)
	cmd.Aliases = []string{"snapshots"}
	return cmd
}

var snapshotHeader = []string{"ID", "NAME", "STATE", "SANDBOX", "SIZE", "CREATED", "REASON"}

func snapshotRow(s client.SnapshotFields) []string {
	size := ""
	if s.SizeBytes != nil {
		size = strconv.FormatInt(*s.SizeBytes, 10)
	}
	return []string{s.Id, s.Name, string(s.State), s.Sandbox.Id, orDash(size), s.CreatedAt.Local().Format(time.RFC3339),
		orDash(deref(s.StateReason))}
}
