package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/sqlc"
)

// ResolvedImage is what an instance boots from.
type ResolvedImage struct {
	URL    string
	SHA256 string
	// Format is raw, qcow2 or iso.
	Format string
	// Verified becomes the instance's imageVerified, which pool policy can require.
	Verified bool
	// ProviderImages name the image at providers, by provider kind.
	ProviderImages map[string]string
}

// ImageResolver finds the image imageID for a tenant, inside the admission
// transaction. It returns nil when the tenant cannot see the image, which
// admission answers with NOT_FOUND.
type ImageResolver interface {
	Resolve(ctx context.Context, tx pgx.Tx, tenantID, imageID uuid.UUID) (*ResolvedImage, error)
}

// RegisteredImages resolves the registered images a tenant owns or that are
// public and not deleted.
type RegisteredImages struct{}

// Resolve implements ImageResolver.
func (RegisteredImages) Resolve(ctx context.Context, tx pgx.Tx, tenantID, imageID uuid.UUID) (*ResolvedImage, error) {
	img, err := sqlc.New(tx).ResolveImage(ctx, sqlc.ResolveImageParams{ID: imageID, Tenant: &tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resolve image %s: %w", imageID, err)
	}
	r := &ResolvedImage{URL: img.Source, SHA256: img.Sha256, Format: img.Format, Verified: img.Verified}
	json.Unmarshal(img.ProviderImages, &r.ProviderImages)
	return r, nil
}
