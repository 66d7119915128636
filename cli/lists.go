package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

// pager reads one page of a list: up to first items after a cursor.
type pager[N any] func(ctx context.Context, api *client.Client, first int, after *string) ([]N, client.PageFields, error)

// listCmd is a "list" command: it follows the list's pages (all of them,
// or --limit items) and shows the items, one row each under header.
func listCmd[N any](a *app, short string, header []string, row func(N) []string, page pager[N]) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			items, err := client.All(cmd.Context(), limit, func(ctx context.Context, first int, after *string) ([]N, client.PageFields, error) {
				return page(ctx, api, first, after)
			})
			if err != nil {
				return err
			}
			rows := make([][]string, len(items))
			for i, it := range items {
				rows[i] = row(it)
			}
			if items == nil {
				items = []N{} // JSON [] rather than null
			}
			return show(a.stdout, a.output, items, header, rows)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (0: all, read a page of 100 at a time)")
	return cmd
}
