package control_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

// deletable is a tenant with a member token, an instance, a registered
// image and a quota, for a deletion to end.
type deletable struct {
	svc      *control.Service
	db       *pgxpool.Pool
	q        *sqlc.Queries
	ctx      context.Context
	tenant   uuid.UUID
	token    string
	instance uuid.UUID
}

func newDeletable(t *testing.T) deletable {
	t.Helper()
	sealer, _ := seal.New("test")
	// Room for a deletion, four creates waiting on it and a look at them.
	url := testenv.DatabaseURL(t)
	if strings.Contains(url, "?") {
		url += "&pool_max_conns=8"
	} else {
		url += "?pool_max_conns=8"
	}
	db := testenv.Open(t, url)
	svc := control.New(db, control.Config{Sealer: sealer})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	tenant, err := svc.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := svc.CreateAPIToken(ctx, control.APITokenInput{Name: "dev", TenantID: tenant.ID})
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := svc.CreatePool(ctx, control.PoolInput{Name: "fra1", Class: vps.ClassHosted})
	flavor, _ := svc.CreateFlavor(ctx, control.FlavorInput{Name: "one", Vcpus: 1, MemoryMB: 512, DiskGB: 5})
	img, err := svc.RegisterImage(ctx, control.ImageInput{Name: "img", SourceURL: "file:///i.raw", SHA256: strings.Repeat("b", 64), Format: "raw",
		Visibility: "tenant", TenantID: tenant.ID})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := svc.CreateInstance(ctx, control.CreateInstanceInput{TenantID: tenant.ID, PoolID: pool.ID, FlavorID: flavor.ID, ImageID: img.ID,
		Name: "web", SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl k"}})
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	if _, err := svc.SetQuota(ctx, control.QuotaInput{TenantID: tenant.ID, Instances: &one}); err != nil {
		t.Fatal(err)
	}
	return deletable{svc: svc, db: db, q: sqlc.New(db), ctx: ctx, tenant: tenant.ID, token: tok.Secret, instance: inst.ID}
}

// TestTenantDeletedHandlersInOrder: deleting a tenant runs the handlers a
// later module registers, in the order registered, after this package's
// own (the tenant's tokens are already refused in the transaction they
// run in), each given the deleted tenant.
func TestTenantDeletedHandlersInOrder(t *testing.T) {
	t.Parallel()
	d := newDeletable(t)
	var ran []string
	for _, name := range []string{"first", "second"} {
		d.svc.OnTenantDeleted(name, func(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
			if tenant != d.tenant {
				t.Errorf("%s got tenant %s, want %s", name, tenant, d.tenant)
			}
			if _, err := iam.Authenticate(ctx, q, d.token); err == nil {
				t.Errorf("%s ran while the tenant's token still worked", name)
			}
			inst, err := q.GetInstance(ctx, d.instance)
			if err != nil || inst.DesiredState != "DELETED" {
				t.Errorf("%s ran before the instance was asked to be deleted: %s, %v", name, inst.DesiredState, err)
			}
			ran = append(ran, name)
			return 1, nil
		})
	}
	if _, err := d.svc.DeleteTenant(d.ctx, d.tenant); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"first", "second"}) {
		t.Fatalf("handlers ran %v, want [first second]", ran)
	}
}

// TestFailingTenantDeletedHandlerRollsBack: a handler's error fails the
// deletion and undoes it whole: the tenant, its token, its instance, its
// image and its quota are as they were, and no later handler runs.
func TestFailingTenantDeletedHandlerRollsBack(t *testing.T) {
	t.Parallel()
	d := newDeletable(t)
	broken := errors.New("module down")
	d.svc.OnTenantDeleted("broken", func(context.Context, *sqlc.Queries, uuid.UUID) (int, error) { return 0, broken })
	later := false
	d.svc.OnTenantDeleted("later", func(context.Context, *sqlc.Queries, uuid.UUID) (int, error) { later = true; return 0, nil })

	if _, err := d.svc.DeleteTenant(d.ctx, d.tenant); !errors.Is(err, broken) {
		t.Fatalf("DeleteTenant with a failing handler = %v, want %v", err, broken)
	}
	if later {
		t.Error("a handler after the failing one ran")
	}
	if _, err := d.svc.Tenant(d.ctx, d.tenant); err != nil {
		t.Errorf("the tenant after a failed deletion: %v", err)
	}
	if p, err := iam.Authenticate(d.ctx, d.q, d.token); err != nil || p.TenantID != d.tenant {
		t.Errorf("the tenant's token after a failed deletion: %+v, %v", p, err)
	}
	if inst, err := d.svc.Instance(d.ctx, d.instance); err != nil || inst.DesiredState != "RUNNING" {
		t.Errorf("the instance after a failed deletion: %+v, %v", inst, err)
	}
	if imgs, err := d.q.ListImages(d.ctx, &d.tenant); err != nil || len(imgs) != 1 {
		t.Errorf("the tenant's images after a failed deletion: %d, %v", len(imgs), err)
	}
	if quota, _, err := d.svc.Quota(d.ctx, d.tenant); err != nil || quota.Instances == nil {
		t.Errorf("the tenant's quota after a failed deletion: %+v, %v", quota, err)
	}
}

// TestTenantCreatesWaitForItsDeletion: what names a tenant (a token, an
// image, a provider account, a dedicated pool) and is asked for while the
// tenant is being deleted waits for the deletion, then is NOT_FOUND: no
// handler misses an object made beside it.
func TestTenantCreatesWaitForItsDeletion(t *testing.T) {
	t.Parallel()
	d := newDeletable(t)
	inside, release := make(chan struct{}), make(chan struct{})
	d.svc.OnTenantDeleted("held", func(context.Context, *sqlc.Queries, uuid.UUID) (int, error) {
		close(inside)
		<-release
		return 0, nil
	})
	deleted := make(chan error, 1)
	go func() { _, err := d.svc.DeleteTenant(d.ctx, d.tenant); deleted <- err }()
	select {
	case <-inside:
	case err := <-deleted:
		t.Fatalf("DeleteTenant ended before its handler ran: %v", err)
	}

	creates := map[string]func() error{
		"token": func() error {
			_, err := d.svc.CreateAPIToken(d.ctx, control.APITokenInput{Name: "late", TenantID: d.tenant})
			return err
		},
		"image": func() error {
			_, err := d.svc.RegisterImage(d.ctx, control.ImageInput{Name: "late", SourceURL: "file:///l.raw", SHA256: strings.Repeat("c", 64), Format: "raw",
				Visibility: "tenant", TenantID: d.tenant})
			return err
		},
		"provider account": func() error {
			_, err := d.svc.CreateProviderAccount(d.ctx, control.ProviderAccountInput{Name: "late", Provider: control.ProviderHetzner, Credentials: "t", TenantID: d.tenant})
			return err
		},
		"pool": func() error {
			_, err := d.svc.CreatePool(d.ctx, control.PoolInput{Name: "late", Class: vps.ClassHosted, TenantID: d.tenant})
			return err
		},
	}
	results := make(chan string, len(creates))
	for what, create := range creates {
		go func() {
			err := create()
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != apierr.NotFound {
				t.Errorf("%s of a tenant being deleted: %v, want NOT_FOUND once it is", what, err)
			}
			results <- what
		}()
	}
	waiting := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var n int
		err := d.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n == len(creates)
	}
	ok := testenv.Within(10*time.Second, waiting)
	close(release)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	for range creates {
		<-results
	}
	if !ok {
		t.Fatalf("the creates did not wait for the tenant's deletion")
	}
}
