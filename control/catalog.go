package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// FlavorInput creates a flavor.
type FlavorInput struct {
	Name     string
	Vcpus    int32
	MemoryMB int64
	DiskGB   int32
	// GPUModel and GPUCount ask for passed-through GPUs; both or neither.
	GPUModel string
	GPUCount int32
	// ProviderTypes are its server types at providers, by provider kind
	// (hetzner: "cx22"); a provider pool refuses a flavor without one.
	ProviderTypes map[string]string
}

// CreateFlavor creates a flavor. Operators only.
func (s *Service) CreateFlavor(ctx context.Context, in FlavorInput) (domain.Flavor, error) {
	var f sqlc.Flavor
	err := s.mutate(ctx, ActCreateFlavor, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		switch {
		case !slug.MatchString(in.Name):
			return apierr.Invalid("name", "must be a lowercase slug of at most 63 characters")
		case in.Vcpus <= 0:
			return apierr.Invalid("vcpus", "must be positive")
		case in.MemoryMB <= 0:
			return apierr.Invalid("memoryMb", "must be positive")
		case in.DiskGB <= 0:
			return apierr.Invalid("diskGb", "must be positive")
		case in.GPUCount < 0:
			return apierr.Invalid("gpuCount", "must not be negative")
		case (in.GPUCount > 0) != (strings.TrimSpace(in.GPUModel) != ""):
			return apierr.Invalid("gpuModel", "give a GPU model exactly when gpuCount is positive")
		}
		var model *string
		if in.GPUCount > 0 {
			model = &in.GPUModel
		}
		types, err := s.providerMapping("providerServerTypes", in.ProviderTypes)
		if err != nil {
			return err
		}
		f, err = q.CreateFlavor(ctx, sqlc.CreateFlavorParams{ID: ids.New(), Name: in.Name, Vcpus: in.Vcpus, MemoryMb: in.MemoryMB, DiskGb: in.DiskGB,
			GpuModel: model, GpuCount: in.GPUCount, ProviderTypes: types})
		if err != nil {
			return fmt.Errorf("create flavor: %w", err)
		}
		ev.TargetID = f.ID
		ev.Details = map[string]any{"name": in.Name}
		return nil
	})
	return domain.FlavorFromRow(f), err
}

// Flavors lists every flavor.
func (s *Service) Flavors(ctx context.Context) ([]domain.Flavor, error) {
	return list(ctx, "flavors", func(ctx context.Context, _ *uuid.UUID) ([]sqlc.Flavor, error) { return s.q.ListFlavors(ctx) }, domain.FlavorFromRow)
}

// Flavor returns a flavor.
func (s *Service) Flavor(ctx context.Context, id uuid.UUID) (domain.Flavor, error) {
	if _, err := caller(ctx); err != nil {
		return domain.Flavor{}, err
	}
	f, err := s.q.GetFlavor(ctx, id)
	if err != nil {
		return domain.Flavor{}, notFound(err, "id", "flavor")
	}
	return domain.FlavorFromRow(f), nil
}

// ImageInput registers an image.
type ImageInput struct {
	Name string
	// SourceURL is where hosts fetch it: http, https or file.
	SourceURL string
	SHA256    string
	// Format is raw, qcow2 or iso.
	Format string
	// Visibility is public, or tenant (then TenantID owns it).
	Visibility string
	TenantID   uuid.UUID
	Verified   bool
	// ProviderImages are its images or templates at providers, by provider
	// kind (hetzner: "debian-12"; proxmox: a template VMID).
	ProviderImages map[string]string
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// RegisterImage registers an image. Operators only.
func (s *Service) RegisterImage(ctx context.Context, in ImageInput) (domain.Image, error) {
	var img sqlc.Image
	err := s.mutate(ctx, ActRegisterImage, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		if _, err := operator(ctx); err != nil {
			return err
		}
		in.Name = strings.TrimSpace(in.Name)
		in.SHA256 = strings.ToLower(strings.TrimSpace(in.SHA256))
		u, err := url.Parse(in.SourceURL)
		switch {
		case in.Name == "" || len(in.Name) > 100:
			return apierr.Invalid("name", "must be 1-100 characters")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") || (u.Host == "" && u.Path == ""):
			return apierr.Invalid("sourceUrl", "must be an http, https or file URL")
		case !sha256Hex.MatchString(in.SHA256):
			return apierr.Invalid("sha256", "must be 64 hexadecimal digits")
		case in.Format != "raw" && in.Format != "qcow2" && in.Format != "iso":
			return apierr.Invalid("format", "must be raw, qcow2 or iso")
		case in.Visibility != "public" && in.Visibility != "tenant":
			return apierr.Invalid("visibility", "must be public or tenant")
		case (in.Visibility == "tenant") != (in.TenantID != uuid.Nil):
			return apierr.Invalid("tenantId", "name the owning tenant exactly when visibility is tenant")
		}
		var tenant *uuid.UUID
		if in.TenantID != uuid.Nil {
			if _, err := q.LockTenant(ctx, in.TenantID); err != nil {
				return notFound(err, "tenantId", "tenant")
			}
			tenant, ev.TenantID = &in.TenantID, in.TenantID
		}
		mapped, err := s.providerMapping("providerImages", in.ProviderImages)
		if err != nil {
			return err
		}
		img, err = q.CreateImage(ctx, sqlc.CreateImageParams{
			ID: ids.New(), Name: in.Name, Source: in.SourceURL, Sha256: in.SHA256, Format: in.Format,
			Visibility: in.Visibility, TenantID: tenant, Verified: in.Verified, ProviderImages: mapped,
		})
		if err != nil {
			return fmt.Errorf("register image: %w", err)
		}
		ev.TargetID = img.ID
		ev.Details = map[string]any{"name": in.Name, "visibility": in.Visibility, "verified": in.Verified}
		return nil
	})
	return domain.ImageFromRow(img), err
}

// Images lists the images the caller can see.
func (s *Service) Images(ctx context.Context) ([]domain.Image, error) {
	return list(ctx, "images", s.q.ListImages, domain.ImageFromRow)
}

// Image returns an image the caller can see.
func (s *Service) Image(ctx context.Context, id uuid.UUID) (domain.Image, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.Image{}, err
	}
	img, err := s.q.GetImage(ctx, id)
	if err != nil {
		return domain.Image{}, notFound(err, "id", "image")
	}
	if img.Visibility != "public" && (img.TenantID == nil || !p.CanSee(*img.TenantID)) {
		return domain.Image{}, apierr.NotFoundf("id", "image not found")
	}
	return domain.ImageFromRow(img), nil
}

// providerMapping validates a map from provider kind to a name at that
// provider and encodes it.
func (s *Service) providerMapping(field string, m map[string]string) ([]byte, error) {
	for kind, name := range m {
		if !slices.Contains(s.providers, kind) {
			return nil, apierr.Invalid(field, "%q is not a provider this deployment allows (%s)", kind, strings.Join(s.providers, ", "))
		}
		if strings.TrimSpace(name) == "" {
			return nil, apierr.Invalid(field, "the %s entry is empty", kind)
		}
	}
	if m == nil {
		m = map[string]string{}
	}
	return json.Marshal(m)
}

// providerName reads one provider's entry of a mapping.
func providerName(raw []byte, kind string) string {
	var m map[string]string
	json.Unmarshal(raw, &m)
	return m[kind]
}
