package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

func (a *app) eventsCmd() *cobra.Command {
	var (
		ids     []string
		current bool
	)
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Stream instance events as they happen, one line each (-o json: one object each), until interrupted",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ws, errs, err := api.Live(ctx)
			if err != nil {
				return err
			}
			var filter *client.InstanceEventFilter
			if len(ids) > 0 {
				filter = &client.InstanceEventFilter{Ids: ids}
			}
			events, _, err := client.InstanceEvents(ctx, ws, filter, &current)
			if err != nil {
				ws.Close()
				return err
			}
			defer client.CloseDraining(ws, events)
			for {
				select {
				case <-ctx.Done():
					return nil
				case err := <-errs:
					return err
				case ev, ok := <-events:
					if !ok {
						return nil
					}
					if len(ev.Errors) > 0 {
						return fmt.Errorf("%s", ev.Errors[0].Message)
					}
					if err := a.showEvent(ev.Data.InstanceEvents); err != nil {
						return err
					}
				}
			}
		},
	}
	cmd.Flags().StringSliceVar(&ids, "id", nil, "only these instances (repeatable)")
	cmd.Flags().BoolVar(&current, "current", false, "first the current state of each instance")
	return cmd
}

// showEvent writes one event as a line: JSON for -o json and yaml (a
// stream of objects), else words.
func (a *app) showEvent(ev client.InstanceEventsInstanceEventsInstanceEvent) error {
	if a.output != "table" {
		b, err := json.Marshal(&ev) // its instance marshals through a pointer
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	}
	i := ev.Instance.InstanceFields
	line := []string{i.UpdatedAt.Local().Format(time.RFC3339), string(ev.Type), i.Id, i.Name, string(i.State)}
	if r := deref(i.StateReason); r != "" {
		line = append(line, "("+r+")")
	}
	_, err := fmt.Fprintln(a.stdout, strings.Join(line, " "))
	return err
}
