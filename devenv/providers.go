package devenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/vps"
)

// Emulated says where `dev` runs its provider emulators and how to log in.
type Emulated struct {
	// HetznerURL is the Hetzner Cloud API's base URL, ending in /v1.
	HetznerURL, HetznerToken string
	// ProxmoxURL is the Proxmox VE API's base URL, ending in /api2/json.
	ProxmoxURL, ProxmoxToken string
	// ProxmoxTemplate is the VMID of the template the emulator holds.
	ProxmoxTemplate int
}

// ProviderPools are the pools SeedProviders makes, by provider kind.
var ProviderPools = map[string]string{control.ProviderHetzner: "hetzner-emulated", control.ProviderProxmox: "proxmox-emulated"}

// CloudFlavor and CloudImage are the flavor and image both provider pools serve.
const (
	CloudFlavor = "cloud-small"
	CloudImage  = "debian-12-cloud"
)

// SeedProviders makes, once, a shared provider account and pool on each
// emulator, and a flavor and image mapped onto both. An account an earlier
// dev made is pointed at where the emulators are now.
func SeedProviders(ctx context.Context, svc *control.Service, e Emulated) error {
	ctx = iam.WithPrincipal(audit.WithRequestID(ctx, "dev-seed"), control.System)
	accounts := []control.ProviderAccountInput{
		{Name: "hetzner-emulator", Provider: control.ProviderHetzner, Credentials: e.HetznerToken,
			Settings: map[string]any{"endpoint": e.HetznerURL, "location": "fsn1"}},
		{Name: "proxmox-emulator", Provider: control.ProviderProxmox, Credentials: e.ProxmoxToken,
			Settings: map[string]any{"endpoint": e.ProxmoxURL, "node": "pve", "storage": "local-lvm", "template": e.ProxmoxTemplate}},
	}
	for _, in := range accounts {
		acct, err := findOr(ctx, svc.ProviderAccounts, func(a domain.ProviderAccount) bool { return a.Name == in.Name }, func() (domain.ProviderAccount, error) {
			return svc.CreateProviderAccount(ctx, in)
		})
		if err != nil {
			return fmt.Errorf("seed provider account %s: %w", in.Name, err)
		}
		var was map[string]any
		json.Unmarshal(acct.Settings, &was)
		if was["endpoint"] != in.Settings["endpoint"] {
			// An earlier dev served its emulator elsewhere (its default
			// address was taken, or another was asked for). The servers it
			// held died with it wherever it was: point the account here.
			acct, err = svc.UpdateProviderAccount(ctx, control.UpdateProviderAccountInput{ID: acct.ID, Settings: in.Settings})
			if err != nil {
				return fmt.Errorf("point provider account %s, made by an earlier dev at %v, at the emulator's %v: %w",
					in.Name, was["endpoint"], in.Settings["endpoint"], err)
			}
		}
		name := ProviderPools[in.Provider]
		_, err = findOr(ctx, svc.Pools, func(p domain.Pool) bool { return p.Name == name }, func() (domain.Pool, error) {
			return svc.CreatePool(ctx, control.PoolInput{Name: name, Class: vps.ClassProvider, ProviderAccountID: acct.ID})
		})
		if err != nil {
			return fmt.Errorf("seed pool %s: %w", name, err)
		}
	}
	_, err := findOr(ctx, svc.Flavors, func(f domain.Flavor) bool { return f.Name == CloudFlavor }, func() (domain.Flavor, error) {
		return svc.CreateFlavor(ctx, control.FlavorInput{Name: CloudFlavor, Vcpus: 2, MemoryMB: 4096, DiskGB: 40,
			ProviderTypes: map[string]string{control.ProviderHetzner: "cx22"}})
	})
	if err != nil {
		return fmt.Errorf("seed flavor %s: %w", CloudFlavor, err)
	}
	_, err = findOr(ctx, svc.Images, func(x domain.Image) bool { return x.Name == CloudImage }, func() (domain.Image, error) {
		return svc.RegisterImage(ctx, control.ImageInput{Name: CloudImage, SourceURL: "file:///var/lib/better-compute/images/debian-12.qcow2",
			SHA256: strings.Repeat("0", 64), Format: "qcow2", Visibility: "public", Verified: true,
			ProviderImages: map[string]string{control.ProviderHetzner: "debian-12", control.ProviderProxmox: fmt.Sprint(e.ProxmoxTemplate)}})
	})
	if err != nil {
		return fmt.Errorf("seed image %s: %w", CloudImage, err)
	}
	return nil
}
