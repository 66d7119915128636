package control_test

import (
	"context"
	"slices"
	"testing"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/seal"
)

// TestCreateInstanceStatements: a create reads its pool, flavor and image,
// writes the instance, its event and its audit row, and checks the quota
// under the tenant's lock, in one transaction; it reads no leases (a new
// instance has none). The lock is taken last, so the tenant's creates wait
// for each other's check and commit only.
func TestCreateInstanceStatements(t *testing.T) {
	t.Parallel()
	var ran testenv.Statements
	sealer, _ := seal.New("test")
	svc := control.New(testenv.Traced(t, testenv.DB(t), &ran), control.Config{Sealer: sealer})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	c := newCatalog(t, ctx, svc)
	ran.Take()
	_, err := svc.CreateInstance(ctx, control.CreateInstanceInput{TenantID: c.tenant, PoolID: c.pool, FlavorID: c.flavor, ImageID: c.image,
		Name: "vm", SSHKeys: []string{c.key}})
	check(t, err)
	want := []string{"begin", "GetPool", "GetFlavor", "ResolveImage", "InsertInstance", "InsertOutbox", "InsertAuditEvent", "LockTenantQuota", "commit"}
	if got := ran.Take(); !slices.Equal(got, want) {
		t.Fatalf("a create ran %d statements %v, want %d: %v", len(got), got, len(want), want)
	}
}
