package control_test

import (
	"context"
	"errors"
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
