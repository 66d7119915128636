package control_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
)

// TestConflictsCoverEveryUniqueIndex: each unique index of the schema is
// either one an input can run into, whose CONFLICT names its field, or one
// holding values the service makes itself (internal below). A new index
// fails this test until it is put in one of the two.
func TestConflictsCoverEveryUniqueIndex(t *testing.T) {
	t.Parallel()
	internal := []string{
		"allocations_instance_live", "device_claims_device_live",
		"hosts_credential_hash_key", "instance_state_history_current", "instances_sandbox",
		"ip_leases_address_live", "provider_bootstraps_join_token_hash_key",
		"sandbox_events_sandbox_id_seq_key", "sandbox_snapshots_command", "sandbox_snapshots_purge_command",
	}
	rows, err := testenv.DB(t).Query(context.Background(), `
		SELECT c.relname FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE i.indisunique AND NOT i.indisprimary AND n.nspname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var indexes []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	named := control.ConflictIndexes()
	for _, ix := range indexes {
		if slices.Contains(named, ix) == slices.Contains(internal, ix) {
			t.Errorf("unique index %s: put it in control's conflicts (an input can meet it) or in this test's internal list (it cannot)", ix)
		}
	}
	for _, ix := range append(named, internal...) {
		if !slices.Contains(indexes, ix) {
			t.Errorf("%s is listed but the schema has no such unique index", ix)
		}
	}
}

// TestConflictNamesItsField: a taken name comes back as CONFLICT on the
// field name, in words, never with an index's name.
func TestConflictNamesItsField(t *testing.T) {
	t.Parallel()
	sealer, _ := seal.New("test")
	svc := control.New(testenv.DB(t), control.Config{Sealer: sealer})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	c := newCatalog(t, ctx, svc)
	image := control.ImageInput{Name: "debian", SourceURL: "file:///images/other.raw", SHA256: strings.Repeat("b", 64),
		Format: "raw", Visibility: "public", Verified: true}
	own := image
	own.Visibility, own.TenantID = "tenant", c.tenant
	if _, err := svc.RegisterImage(ctx, own); err != nil {
		t.Fatalf("a tenant's image named as a public one: %v", err)
	}
	for _, tc := range []struct {
		name   string
		create func() error
	}{
		{"a flavor's", func() error {
			_, err := svc.CreateFlavor(ctx, control.FlavorInput{Name: "one", Vcpus: 2, MemoryMB: 2048, DiskGB: 20})
			return err
		}},
		{"a public image's", func() error { _, err := svc.RegisterImage(ctx, image); return err }},
		{"a tenant's image's", func() error { _, err := svc.RegisterImage(ctx, own); return err }},
		{"a pool's", func() error {
			_, err := svc.CreatePool(ctx, control.PoolInput{Name: "fra1", Class: vps.ClassHosted})
			return err
		}},
		{"a tenant's", func() error { _, err := svc.CreateTenant(ctx, "acme"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			var apiErr *apierr.Error
			if !errors.As(err, &apiErr) || apiErr.Code != apierr.Conflict || apiErr.Field != "name" {
				t.Fatalf("taken name: %v, want CONFLICT on name", err)
			}
			if strings.Contains(apiErr.Message, "_") || !strings.Contains(apiErr.Message, "already exists") {
				t.Fatalf("message %q: want words, no index name", apiErr.Message)
			}
		})
	}
}

// TestBootstrapTokenRace: servers starting at once with the same
// BC_BOOTSTRAP_TOKEN all start, and make one token between them.
func TestBootstrapTokenRace(t *testing.T) {
	t.Parallel()
	sealer, _ := seal.New("test")
	db := testenv.DB(t)
	svc := control.New(db, control.Config{Sealer: sealer})
	const servers = 4
	errs := make(chan error, servers)
	start := make(chan struct{})
	for range servers {
		go func() {
			<-start
			errs <- svc.EnsureBootstrapToken(context.Background(), "bct_bootstrap-race-token")
		}()
	}
	close(start)
	for range servers {
		if err := <-errs; err != nil {
			t.Errorf("a server's start: %v", err)
		}
	}
	var n int
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM api_tokens WHERE name = 'bootstrap'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("bootstrap tokens = %d, %v; want 1", n, err)
	}
}
