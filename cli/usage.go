package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

func (a *app) usageCmd() *cobra.Command {
	var (
		from, to string
		by       []string
	)
	cmd := &cobra.Command{
		Use:   "usage --from DATE --to DATE [--by day,instance,…]",
		Short: "What was used in [from, to): hours of vCPU, memory, disk and GPU, and seconds per state",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			start, err := parseDay(from)
			if err != nil {
				return usageError{fmt.Errorf("--from: %w", err)}
			}
			end, err := parseDay(to)
			if err != nil {
				return usageError{fmt.Errorf("--to: %w", err)}
			}
			groups := make([]client.UsageGroup, len(by))
			for i, g := range by {
				groups[i] = client.UsageGroup(strings.ToUpper(g))
			}
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.Usage(cmd.Context(), api, start, end, groups, nil)
			if err != nil {
				return err
			}
			rows := make([][]string, len(out.Usage))
			for i, u := range out.Usage {
				day := ""
				if u.Day != nil {
					day = u.Day.Format(time.DateOnly)
				}
				rows[i] = []string{orDash(day), orDash(deref(u.InstanceId)), orDash(deref(u.PoolId)), orDash(deref(u.FlavorId)),
					fmt.Sprintf("%.2f", u.VcpuHours), fmt.Sprintf("%.2f", u.MemoryGibHours), fmt.Sprintf("%.2f", u.DiskGibHours),
					fmt.Sprintf("%.2f", u.GpuHours)}
			}
			return show(a.stdout, a.output, out.Usage, []string{"DAY", "INSTANCE", "POOL", "FLAVOR", "VCPU-H", "MEM-GIB-H", "DISK-GIB-H", "GPU-H"}, rows)
		},
	}
	now := time.Now().UTC()
	cmd.Flags().StringVar(&from, "from", now.AddDate(0, 0, -30).Format(time.DateOnly), "the first day (YYYY-MM-DD) or time (RFC 3339)")
	cmd.Flags().StringVar(&to, "to", now.AddDate(0, 0, 1).Format(time.DateOnly), "the day or time it ends before")
	cmd.Flags().StringSliceVar(&by, "by", nil, "group by: tenant, pool, flavor, instance, day")
	return cmd
}

// parseDay reads a date (UTC midnight) or an RFC 3339 time.
func parseDay(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}
