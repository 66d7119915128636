package control_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

// TestAnswerInTheTransaction: a mutation's answer is read in its
// transaction. Read after the commit, a database that goes away in between
// (a restart, a failover) makes a mutation that was done, and audited,
// answer with an error: the caller retries or gives up on what happened.
// Here every connection after the mutation's first fails.
func TestAnswerInTheTransaction(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	// armed counts the connections taken while a mutation runs; after the
	// first, the database is gone.
	var armed, taken atomic.Int32
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
		if armed.Load() == 1 && taken.Add(1) > 1 {
			return false, errors.New("the database went away after the commit")
		}
		return true, nil
	}
	db, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	sealer, _ := seal.New("test")
	svc := control.New(db, control.Config{Sealer: sealer})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	c := newCatalog(t, ctx, svc)

	var id uuid.UUID
	for _, tc := range []struct {
		name   string
		mutate func() (domain.Instance, error)
	}{
		{"create", func() (domain.Instance, error) {
			return svc.CreateInstance(ctx, control.CreateInstanceInput{TenantID: c.tenant, PoolID: c.pool, FlavorID: c.flavor, ImageID: c.image,
				Name: "vm", SSHKeys: []string{c.key}})
		}},
		{"stop", func() (domain.Instance, error) { return svc.SetDesiredState(ctx, id, lifecycle.WantStopped) }},
		{"start", func() (domain.Instance, error) { return svc.SetDesiredState(ctx, id, lifecycle.WantRunning) }},
		{"delete", func() (domain.Instance, error) { return svc.SetDesiredState(ctx, id, lifecycle.WantDeleted) }},
	} {
		taken.Store(0)
		armed.Store(1)
		inst, err := tc.mutate()
		armed.Store(0)
		if err != nil {
			t.Fatalf("%s: done, but answered %v", tc.name, err)
		}
		id = inst.ID
	}

	tmpl := c.template(t, ctx, svc)
	var sbx uuid.UUID
	for _, tc := range []struct {
		name   string
		mutate func() (domain.Sandbox, error)
	}{
		{"create sandbox", func() (domain.Sandbox, error) {
			return svc.CreateSandbox(ctx, control.CreateSandboxInput{TenantID: c.tenant, TemplateID: tmpl})
		}},
		{"pause sandbox", func() (domain.Sandbox, error) { return svc.PauseSandbox(ctx, sbx) }},
		{"delete sandbox", func() (domain.Sandbox, error) { return svc.DeleteSandbox(ctx, sbx) }},
	} {
		taken.Store(0)
		armed.Store(1)
		got, err := tc.mutate()
		armed.Store(0)
		if err != nil {
			t.Fatalf("%s: done, but answered %v", tc.name, err)
		}
		if got.Instance == nil || got.Instance.ID != got.InstanceID {
			t.Fatalf("%s: answered without its instance (%+v): the API would read it after the commit", tc.name, got.Instance)
		}
		sbx = got.ID
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSandboxLockBesideInstanceSteps: a sandbox mutation holding its
// sandbox's lock does not block a transaction that changes the sandbox's
// instance twice (the reconciler's steps) at its commit, where the
// instance's deferred foreign key to the sandbox is checked; blocked, the
// two deadlock as the mutation goes on to lock the instance.
func TestSandboxLockBesideInstanceSteps(t *testing.T) {
	t.Parallel()
	ctx := iam.WithPrincipal(context.Background(), control.System)
	db, err := pgxpool.New(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	sealer, _ := seal.New("test")
	svc := control.New(db, control.Config{Sealer: sealer})
	c := newCatalog(t, ctx, svc)
	tmpl := c.template(t, ctx, svc)
	sbx, err := svc.CreateSandbox(ctx, control.CreateSandboxInput{TenantID: c.tenant, TemplateID: tmpl})
	check(t, err)

	mutation, err := db.Begin(ctx)
	check(t, err)
	defer mutation.Rollback(ctx)
	_, err = sqlc.New(mutation).LockSandbox(ctx, sbx.ID)
	check(t, err)

	steps, err := db.Begin(ctx)
	check(t, err)
	defer steps.Rollback(ctx)
	for range 2 {
		_, err := steps.Exec(ctx, `UPDATE instances SET version = version + 1 WHERE id = $1`, sbx.InstanceID)
		check(t, err)
	}
	commitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := steps.Commit(commitCtx); err != nil {
		t.Fatalf("the instance's steps could not commit beside the sandbox's lock: %v", err)
	}
}

// catalog is what the tests here create in: a tenant, a hosted pool, a
// flavor, an image and an SSH key.
type catalog struct {
	tenant, pool, flavor, image uuid.UUID
	key                         string
}

func newCatalog(t *testing.T, ctx context.Context, svc *control.Service) catalog {
	t.Helper()
	tenant, err := svc.CreateTenant(ctx, "acme")
	check(t, err)
	pool, err := svc.CreatePool(ctx, control.PoolInput{Name: "fra1", Class: vps.ClassHosted})
	check(t, err)
	flavor, err := svc.CreateFlavor(ctx, control.FlavorInput{Name: "one", Vcpus: 1, MemoryMB: 1024, DiskGB: 10})
	check(t, err)
	img, err := svc.RegisterImage(ctx, control.ImageInput{Name: "debian", SourceURL: "file:///images/debian.raw",
		SHA256: strings.Repeat("a", 64), Format: "raw", Visibility: "public", Verified: true})
	check(t, err)
	pub, _, _ := ed25519.GenerateKey(nil)
	key, _ := ssh.NewPublicKey(pub)
	return catalog{tenant: tenant.ID, pool: pool.ID, flavor: flavor.ID, image: img.ID, key: string(ssh.MarshalAuthorizedKey(key))}
}

// template creates a sandbox template of the catalog and returns its ID.
func (c catalog) template(t *testing.T, ctx context.Context, svc *control.Service) uuid.UUID {
	t.Helper()
	tmpl, err := svc.CreateSandboxTemplate(ctx, control.SandboxTemplateInput{TenantID: c.tenant, PoolID: c.pool, FlavorID: c.flavor,
		ImageID: c.image, Name: "ci", SSHKeys: []string{c.key}})
	check(t, err)
	return tmpl.ID
}
