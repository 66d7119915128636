package control

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// fromTemplate says whose instance of a template to make, and what it
// holds beyond the template's.
type fromTemplate struct {
	tenant  uuid.UUID
	desired lifecycle.Desired
	// sandbox is the sandbox it runs; zero for a warm instance.
	sandbox uuid.UUID
	// extraKeys and extraEnv are a sandbox's own, added to the template's
	// (a sandbox's env wins over its template's).
	extraKeys []string
	extraEnv  map[string]string
	// restoreFrom is the snapshot a restored sandbox's instance boots
	// from; nil for one booted from the template's image.
	restoreFrom *uuid.UUID
	// flavor is the size it boots with: the template's flavor, or a
	// restore's (restoreFlavor).
	flavor sqlc.Flavor
}

// insertFromTemplate inserts an instance of the template's current
// version, of o's flavor, with its own copy of the template's env sealed
// to it, and writes its event.
func (s *Service) insertFromTemplate(ctx context.Context, tx pgx.Tx, q *sqlc.Queries, t sqlc.SandboxTemplate, o fromTemplate) (sqlc.Instance, error) {
	var none sqlc.Instance
	flavor := o.flavor
	img, err := s.images.Resolve(ctx, tx, imageTenant(t.TenantID, t.Public), t.ImageID)
	if err != nil {
		return none, err
	}
	if img == nil {
		return none, apierr.New(apierr.FailedPrecondition, "the image of template %s is no longer available", t.Name)
	}
	env, err := s.openEnv(t.Env, t.ID)
	if err != nil {
		return none, err
	}
	maps.Copy(env, o.extraEnv)
	keys := append(slices.Clone(t.SshKeys), o.extraKeys...)
	id := ids.New()
	sealed, err := s.sealEnv(env, id)
	if err != nil {
		return none, err
	}
	p := sqlc.InsertTemplateInstanceParams{
		ID: id, TenantID: o.tenant, PoolID: t.PoolID, FlavorID: flavor.ID, ImageID: t.ImageID,
		ImageUrl: img.URL, ImageSha256: img.SHA256, ImageFormat: img.Format, ImageVerified: img.Verified,
		SshKeys: keys, Vcpus: flavor.Vcpus, MemoryMb: flavor.MemoryMb, DiskGb: flavor.DiskGb,
		GpuModel: flavor.GpuModel, GpuCount: flavor.GpuCount, DesiredState: string(o.desired),
		NetworkPolicy: t.Network, EnvSealed: sealed, RestoreFrom: o.restoreFrom,
	}
	if o.sandbox == uuid.Nil {
		p.Name = "warm-" + idBody(ids.Instance, id)
		p.WarmTemplateID, p.WarmTemplateVersion = &t.ID, &t.InstanceVersion
	} else {
		p.Name = "sbx-" + idBody(ids.Sandbox, o.sandbox)
		p.SandboxID = &o.sandbox
	}
	inst, err := q.InsertTemplateInstance(ctx, p)
	if err != nil {
		return none, fmt.Errorf("insert the template's instance: %w", err)
	}
	if err := events.Enqueue(ctx, q, vps.TopicInstances, events.Created, inst); err != nil {
		return none, err
	}
	return inst, nil
}

// idBody is the part of an API ID after its kind, which is a valid
// hostname label: instance names of sandboxes are made of it.
func idBody(k ids.Kind, id uuid.UUID) string {
	return strings.TrimPrefix(ids.Encode(k, id), string(k)+"_")
}

// AddWarmInstance adds one instance to a template's warm pool: of the
// template's current instance version, owned by the template's tenant
// (counted against its quota: QUOTA_EXCEEDED when it has no room), and
// asked to boot and then pause. The vps.sandboxes reconciler fills pools
// with it; createSandbox claims what it adds.
func (s *Service) AddWarmInstance(ctx context.Context, template uuid.UUID) (domain.Instance, error) {
	var out domain.Instance
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		t, err := q.LockSandboxTemplate(ctx, template)
		if errors.Is(err, pgx.ErrNoRows) {
			return apierr.NotFoundf("id", "sandbox template not found")
		}
		if err != nil {
			return fmt.Errorf("lock sandbox template: %w", err)
		}
		if t.TenantID == nil {
			return apierr.New(apierr.FailedPrecondition, "template %s has no tenant to own warm instances", t.Name)
		}
		flavor, err := q.GetFlavor(ctx, t.FlavorID)
		if err != nil {
			return fmt.Errorf("read the template's flavor: %w", err)
		}
		if err := lockQuota(ctx, q, *t.TenantID, flavor); err != nil {
			return err
		}
		inst, err := s.insertFromTemplate(ctx, tx, q, t, fromTemplate{tenant: *t.TenantID, desired: lifecycle.WantPaused, flavor: flavor})
		if err != nil {
			return err
		}
		out, err = withAddresses(ctx, q, inst)
		return err
	})
	if err != nil {
		return domain.Instance{}, fmt.Errorf("add a warm instance to template %s: %w", template, err)
	}
	return out, nil
}
