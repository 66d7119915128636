package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/seal"
)

// TestProvidersAllowed: the deployment decides which providers accounts may
// use; any other is INVALID_INPUT.
func TestProvidersAllowed(t *testing.T) {
	t.Parallel()
	sealer, _ := seal.New("test")
	svc := control.New(testenv.DB(t), control.Config{Sealer: sealer, Providers: []string{control.ProviderHetzner}})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	_, err := svc.CreateProviderAccount(ctx, control.ProviderAccountInput{Name: "pve", Provider: control.ProviderProxmox, Credentials: "t",
		Settings: map[string]any{"endpoint": "https://pve:8006", "node": "n", "storage": "s", "template": 9000}})
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidInput || e.Field != "provider" {
		t.Fatalf("proxmox on a hetzner-only deployment: %v", err)
	}
	if _, err := svc.CreateProviderAccount(ctx, control.ProviderAccountInput{Name: "h", Provider: control.ProviderHetzner, Credentials: "t"}); err != nil {
		t.Fatalf("hetzner: %v", err)
	}
}

// TestProviderSettingsChecked: an account's settings go, as they will be
// stored, through the check the deployment gives for its provider, whose
// fault is the API's answer; an update that leaves them out checks the
// stored ones.
func TestProviderSettingsChecked(t *testing.T) {
	sealer, _ := seal.New("test")
	var checked []string
	var shared []bool
	check := func(raw json.RawMessage, isShared bool) error {
		checked = append(checked, string(raw))
		shared = append(shared, isShared)
		if strings.Contains(string(raw), "ftp:") {
			return apierr.Invalid("settings.endpoint", "must be the API URL")
		}
		return nil
	}
	svc := control.New(testenv.DB(t), control.Config{Sealer: sealer, ProviderSettings: map[string]control.ProviderSettingsCheck{control.ProviderHetzner: check}})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	_, err := svc.CreateProviderAccount(ctx, control.ProviderAccountInput{Name: "h", Provider: control.ProviderHetzner, Credentials: "t",
		Settings: map[string]any{"endpoint": "ftp://x"}})
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidInput || e.Field != "settings.endpoint" {
		t.Fatalf("refused settings: %v", err)
	}
	acct, err := svc.CreateProviderAccount(ctx, control.ProviderAccountInput{Name: "h", Provider: control.ProviderHetzner, Credentials: "t",
		Settings: map[string]any{"location": "fsn1"}})
	if err != nil {
		t.Fatal(err)
	}
	rotated := "t2"
	if _, err := svc.UpdateProviderAccount(ctx, control.UpdateProviderAccountInput{ID: acct.ID, Credentials: &rotated}); err != nil {
		t.Fatal(err)
	}
	tenant, err := svc.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateProviderAccount(ctx, control.ProviderAccountInput{TenantID: tenant.ID, Name: "h", Provider: control.ProviderHetzner, Credentials: "t"}); err != nil {
		t.Fatal(err)
	}
	if len(checked) != 4 || checked[1] != `{"location":"fsn1"}` || !strings.Contains(checked[2], `"fsn1"`) {
		t.Fatalf("checked %q", checked)
	}
	// The check is told whose account it is: the operators' shared ones
	// skip the endpoint list.
	if want := []bool{true, true, true, false}; !slices.Equal(shared, want) {
		t.Fatalf("shared = %v, want %v", shared, want)
	}
	// No check for a provider: its settings are stored as given.
	if _, err := svc.CreateProviderAccount(ctx, control.ProviderAccountInput{Name: "p", Provider: control.ProviderProxmox, Credentials: "t",
		Settings: map[string]any{"endpoint": "ftp://x"}}); err != nil {
		t.Fatalf("proxmox, unchecked: %v", err)
	}
}
