package control_test

import (
	"context"
	"strings"
	"testing"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
)

// TestReseal: after a rotation, Reseal seals every value again under the
// new secret, so the old one can be dropped; a second run has nothing to do.
func TestReseal(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := iam.WithPrincipal(context.Background(), control.System)
	old, _ := seal.New("old secret")
	before := control.New(db, control.Config{Sealer: old})
	tenant, err := before.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := before.CreatePool(ctx, control.PoolInput{Name: "fra1", Class: vps.ClassHosted})
	flavor, _ := before.CreateFlavor(ctx, control.FlavorInput{Name: "one", Vcpus: 1, MemoryMB: 512, DiskGB: 5})
	img, _ := before.RegisterImage(ctx, control.ImageInput{Name: "img", SourceURL: "file:///i.raw", SHA256: strings.Repeat("b", 64), Format: "raw", Visibility: "public"})
	const userData = "#cloud-config\nhostname: web\n"
	inst, err := before.CreateInstance(ctx, control.CreateInstanceInput{TenantID: tenant.ID, PoolID: pool.ID, FlavorID: flavor.ID, ImageID: img.ID,
		Name: "web", SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl k"}, UserData: []byte(userData)})
	if err != nil {
		t.Fatal(err)
	}
	const token = "hcloud-token"
	acct, err := before.CreateProviderAccount(ctx, control.ProviderAccountInput{Name: "burst", Provider: control.ProviderHetzner, Credentials: token})
	if err != nil {
		t.Fatal(err)
	}

	tpl, err := before.CreateSandboxTemplate(ctx, control.SandboxTemplateInput{TenantID: tenant.ID, Name: "py", PoolID: pool.ID,
		FlavorID: flavor.ID, ImageID: img.ID, Env: []control.EnvVar{{Name: "GREETING", Value: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	sbx, err := before.CreateSandbox(ctx, control.CreateSandboxInput{TenantID: tenant.ID, TemplateID: tpl.ID})
	if err != nil {
		t.Fatal(err)
	}

	rotated, _ := seal.New("new secret", "old secret")
	out, err := control.New(db, control.Config{Sealer: rotated}).Reseal(ctx)
	if err != nil || out.UserData != 1 || out.Credentials != 1 || out.Env != 2 || len(out.Failed) != 0 {
		t.Fatalf("Reseal = %+v, %v", out, err)
	}
	newOnly, _ := seal.New("new secret")
	var ud, creds []byte
	db.QueryRow(context.Background(), "SELECT user_data_sealed FROM instances WHERE id = $1", inst.ID).Scan(&ud)
	db.QueryRow(context.Background(), "SELECT credentials_sealed FROM provider_accounts WHERE id = $1", acct.ID).Scan(&creds)
	if got, err := newOnly.Open(ud, inst.ID[:]); err != nil || string(got) != userData {
		t.Fatalf("user data under the new secret alone: %q, %v", got, err)
	}
	if got, err := newOnly.Open(creds, acct.ID[:]); err != nil || string(got) != token {
		t.Fatalf("credentials under the new secret alone: %q, %v", got, err)
	}
	var env []byte
	db.QueryRow(context.Background(), "SELECT env_sealed FROM instances WHERE id = $1", sbx.InstanceID).Scan(&env)
	if got, err := newOnly.Open(env, sbx.InstanceID[:]); err != nil || string(got) != `{"GREETING":"hello"}` {
		t.Fatalf("the sandbox instance's env under the new secret alone: %q, %v", got, err)
	}
	if again, err := control.New(db, control.Config{Sealer: rotated}).Reseal(ctx); err != nil || again.UserData+again.Credentials+again.Env != 0 {
		t.Fatalf("a second Reseal = %+v, %v", again, err)
	}
	t.Run("a value no secret opens is reported and left alone", func(t *testing.T) {
		other, _ := seal.New("unrelated secret")
		out, err := control.New(db, control.Config{Sealer: other}).Reseal(ctx)
		if err != nil || len(out.Failed) != 4 || out.UserData+out.Credentials+out.Env != 0 {
			t.Fatalf("Reseal with an unrelated secret = %+v, %v", out, err)
		}
	})
}
