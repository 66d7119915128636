package cli

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

// The catalog an instance is made from: pools, flavors and images, each
// listed with the IDs instance create takes.

func (a *app) poolCmd() *cobra.Command {
	return group("pool", "The pools you may create in", &cobra.Command{
		Use:   "list",
		Short: "List pools",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.ListPools(cmd.Context(), api)
			if err != nil {
				return err
			}
			rows := make([][]string, len(out.Pools))
			for i, p := range out.Pools {
				owner := ""
				if p.Tenant != nil {
					owner = p.Tenant.Name
				}
				rows[i] = []string{p.Id, p.Name, p.Class, orDash(owner)}
			}
			return show(a.stdout, a.output, out.Pools, []string{"ID", "NAME", "CLASS", "TENANT"}, rows)
		},
	})
}

func (a *app) flavorCmd() *cobra.Command {
	return group("flavor", "The flavors (sizes) an instance may have", &cobra.Command{
		Use:   "list",
		Short: "List flavors",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.ListFlavors(cmd.Context(), api)
			if err != nil {
				return err
			}
			rows := make([][]string, len(out.Flavors))
			for i, f := range out.Flavors {
				gpus := "-"
				if f.GpuCount > 0 {
					gpus = strconv.Itoa(f.GpuCount) + "×" + deref(f.GpuModel)
				}
				rows[i] = []string{f.Id, f.Name, strconv.Itoa(f.Vcpus), strconv.Itoa(f.MemoryMb), strconv.Itoa(f.DiskGb), gpus}
			}
			return show(a.stdout, a.output, out.Flavors, []string{"ID", "NAME", "VCPUS", "MEMORY MB", "DISK GB", "GPUS"}, rows)
		},
	})
}

func (a *app) imageCmd() *cobra.Command {
	return group("image", "The images an instance may boot", &cobra.Command{
		Use:   "list",
		Short: "List images: the public ones and your tenant's",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.ListImages(cmd.Context(), api)
			if err != nil {
				return err
			}
			rows := make([][]string, len(out.Images))
			for i, img := range out.Images {
				rows[i] = []string{img.Id, img.Name, string(img.Format), string(img.Visibility), strconv.FormatBool(img.Verified)}
			}
			return show(a.stdout, a.output, out.Images, []string{"ID", "NAME", "FORMAT", "VISIBILITY", "VERIFIED"}, rows)
		},
	})
}
