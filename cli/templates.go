package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

func (a *app) templateCmd() *cobra.Command {
	var (
		in      client.CreateSandboxTemplateInput
		keys    []string
		timeout time.Duration
		maxLife time.Duration
		warm    int
	)
	create := &cobra.Command{
		Use:   "create NAME --pool ID --flavor ID --image ID",
		Short: "Create a sandbox template",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			in.Name = as[0]
			if in.SshKeys, err = readAll(keys); err != nil {
				return usageError{err}
			}
			in.DefaultTimeout, in.MaxTimeout = seconds(timeout), seconds(maxLife)
			if cmd.Flags().Changed("warm") {
				in.WarmCount = &warm
			}
			out, err := client.CreateSandboxTemplate(cmd.Context(), api, in)
			if err != nil {
				return err
			}
			t := out.CreateSandboxTemplate.SandboxTemplate.TemplateFields
			return show(a.stdout, a.output, t, templateHeader, [][]string{templateRow(t)})
		},
	}
	catalogFlags(create, &in.PoolId, &in.FlavorId, &in.ImageId)
	f := create.Flags()
	f.StringArrayVar(&keys, "ssh-key", nil, "an SSH public key, or @FILE to read one (repeatable)")
	f.DurationVar(&timeout, "default-timeout", 0, "how long its sandboxes live unless asked otherwise")
	f.DurationVar(&maxLife, "max-timeout", 0, "the longest a sandbox of it may be made to live")
	f.IntVar(&warm, "warm", 0, "how many paused instances to keep ready")
	list := listCmd(a, "List sandbox templates", templateHeader, templateRow,
		func(ctx context.Context, api *client.Client, first int, after *string) ([]client.TemplateFields, client.PageFields, error) {
			out, err := client.ListSandboxTemplates(ctx, api, &first, after)
			if err != nil {
				return nil, client.PageFields{}, err
			}
			return out.SandboxTemplates.Nodes, out.SandboxTemplates.PageInfo, nil
		})
	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show a sandbox template",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.GetSandboxTemplate(cmd.Context(), api, as[0])
			if err != nil {
				return err
			}
			t := out.SandboxTemplate.TemplateFields
			return show(a.stdout, a.output, t, templateHeader, [][]string{templateRow(t)})
		},
	}
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a sandbox template",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.DeleteSandboxTemplate(cmd.Context(), api, as[0])
			if err != nil {
				return err
			}
			t := out.DeleteSandboxTemplate.SandboxTemplate.TemplateFields
			return show(a.stdout, a.output, t, templateHeader, [][]string{templateRow(t)})
		},
	}
	cmd := group("template", "Create, list, show and delete sandbox templates", create, list, get, del)
	cmd.Aliases = []string{"templates"}
	return cmd
}

var templateHeader = []string{"ID", "NAME", "PUBLIC", "POOL", "FLAVOR", "WARM", "DEFAULT TIMEOUT", "MAX TIMEOUT"}

func templateRow(t client.TemplateFields) []string {
	secs := func(n int) string { return (time.Duration(n) * time.Second).String() }
	return []string{t.Id, t.Name, strconv.FormatBool(t.Public), t.Pool.Name, t.Flavor.Name, strconv.Itoa(t.WarmCount),
		secs(t.DefaultTimeout), secs(t.MaxTimeout)}
}
