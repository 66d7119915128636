package cli

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

// The catalog an instance is made from: pools, flavors and images, each
// listed with the IDs instance create takes.

func (a *app) poolCmd() *cobra.Command {
	return group("pool", "The pools you may create in", listCmd(a, "List pools", []string{"ID", "NAME", "CLASS", "TENANT"},
		func(p client.PoolFields) []string {
			owner := ""
			if p.Tenant != nil {
				owner = p.Tenant.Name
			}
			return []string{p.Id, p.Name, p.Class, orDash(owner)}
		},
		func(ctx context.Context, api *client.Client, first int, after *string) ([]client.PoolFields, client.PageFields, error) {
			out, err := client.ListPools(ctx, api, &first, after)
			if err != nil {
				return nil, client.PageFields{}, err
			}
			return out.PoolsConnection.Nodes, out.PoolsConnection.PageInfo, nil
		}))
}

func (a *app) flavorCmd() *cobra.Command {
	return group("flavor", "The flavors (sizes) an instance may have", listCmd(a, "List flavors",
		[]string{"ID", "NAME", "VCPUS", "MEMORY MB", "DISK GB", "GPUS"},
		func(f client.FlavorFields) []string {
			gpus := "-"
			if f.GpuCount > 0 {
				gpus = strconv.Itoa(f.GpuCount) + "×" + deref(f.GpuModel)
			}
			return []string{f.Id, f.Name, strconv.Itoa(f.Vcpus), strconv.Itoa(f.MemoryMb), strconv.Itoa(f.DiskGb), gpus}
		},
		func(ctx context.Context, api *client.Client, first int, after *string) ([]client.FlavorFields, client.PageFields, error) {
			out, err := client.ListFlavors(ctx, api, &first, after)
			if err != nil {
				return nil, client.PageFields{}, err
			}
			return out.FlavorsConnection.Nodes, out.FlavorsConnection.PageInfo, nil
		}))
}

func (a *app) imageCmd() *cobra.Command {
	return group("image", "The images an instance may boot", listCmd(a, "List images: the public ones and your tenant's",
		[]string{"ID", "NAME", "FORMAT", "VISIBILITY", "VERIFIED"},
		func(img client.ImageFields) []string {
			return []string{img.Id, img.Name, string(img.Format), string(img.Visibility), strconv.FormatBool(img.Verified)}
		},
		func(ctx context.Context, api *client.Client, first int, after *string) ([]client.ImageFields, client.PageFields, error) {
			out, err := client.ListImages(ctx, api, &first, after)
			if err != nil {
				return nil, client.PageFields{}, err
			}
			return out.ImagesConnection.Nodes, out.ImagesConnection.PageInfo, nil
		}))
}
