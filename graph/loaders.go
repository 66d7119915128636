package graph

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/vikstrous/dataloadgen"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
)

// loaders batch the reads of related objects within one request, so a page
// of 100 instances costs one query per kind of related object, not 100.
type loaders struct {
	tenants    *dataloadgen.Loader[uuid.UUID, domain.Tenant]
	pools      *dataloadgen.Loader[uuid.UUID, domain.Pool]
	flavors    *dataloadgen.Loader[uuid.UUID, domain.Flavor]
	images     *dataloadgen.Loader[uuid.UUID, domain.Image]
	hosts      *dataloadgen.Loader[uuid.UUID, domain.Host]
	capacities *dataloadgen.Loader[uuid.UUID, domain.HostCapacity]
	allocated  *dataloadgen.Loader[uuid.UUID, domain.HostAllocation]
	gpus       *dataloadgen.Loader[uuid.UUID, []domain.GPU]
	ipPools    *dataloadgen.Loader[uuid.UUID, []domain.IPPool]
	leased     *dataloadgen.Loader[uuid.UUID, int]
	principals *dataloadgen.Loader[uuid.UUID, string]
	instances  *dataloadgen.Loader[uuid.UUID, domain.Instance]
	templates  *dataloadgen.Loader[uuid.UUID, domain.SandboxTemplate]
}

const loaderWait = 200 * time.Microsecond

func newLoaders(svc *control.Service) *loaders {
	return &loaders{
		tenants:    dataloadgen.NewMappedLoader(svc.TenantsByID, dataloadgen.WithWait(loaderWait)),
		pools:      dataloadgen.NewMappedLoader(svc.PoolsByID, dataloadgen.WithWait(loaderWait)),
		flavors:    dataloadgen.NewMappedLoader(svc.FlavorsByID, dataloadgen.WithWait(loaderWait)),
		images:     dataloadgen.NewMappedLoader(svc.ImagesByID, dataloadgen.WithWait(loaderWait)),
		hosts:      dataloadgen.NewMappedLoader(svc.HostsByID, dataloadgen.WithWait(loaderWait)),
		capacities: dataloadgen.NewMappedLoader(svc.HostCapacities, dataloadgen.WithWait(loaderWait)),
		allocated:  dataloadgen.NewMappedLoader(svc.HostAllocations, dataloadgen.WithWait(loaderWait)),
		gpus:       dataloadgen.NewMappedLoader(svc.HostGPUs, dataloadgen.WithWait(loaderWait)),
		ipPools:    dataloadgen.NewMappedLoader(svc.IPPools, dataloadgen.WithWait(loaderWait)),
		leased:     dataloadgen.NewMappedLoader(svc.LeaseCounts, dataloadgen.WithWait(loaderWait)),
		principals: dataloadgen.NewMappedLoader(svc.PrincipalNames, dataloadgen.WithWait(loaderWait)),
		instances:  dataloadgen.NewMappedLoader(svc.InstancesByID, dataloadgen.WithWait(loaderWait)),
		templates:  dataloadgen.NewMappedLoader(svc.SandboxTemplatesByID, dataloadgen.WithWait(loaderWait)),
	}
}

type loadersKey struct{}

// lazyLoaders makes a request's loaders when it first loads: most
// requests, and most websockets (a subscriber's live events run in its
// group), load nothing, and a set of loaders is ~4 KiB.
type lazyLoaders struct {
	svc  *control.Service
	once sync.Once
	l    *loaders
}

// withLoaders returns ctx carrying fresh per-request loaders.
func withLoaders(ctx context.Context, svc *control.Service) context.Context {
	return context.WithValue(ctx, loadersKey{}, &lazyLoaders{svc: svc})
}

func loadersFrom(ctx context.Context) *loaders {
	lz := ctx.Value(loadersKey{}).(*lazyLoaders)
	lz.once.Do(func() { lz.l = newLoaders(lz.svc) })
	return lz.l
}

// load returns the value for key; ok is false when there is none.
func load[V any](ctx context.Context, l *dataloadgen.Loader[uuid.UUID, V], key uuid.UUID) (v V, ok bool, err error) {
	v, err = l.Load(ctx, key)
	if errors.Is(err, dataloadgen.ErrNotFound) {
		return v, false, nil
	}
	return v, err == nil, err
}

// loadPtr returns a pointer to the value for key, or nil when there is none.
func loadPtr[V any](ctx context.Context, l *dataloadgen.Loader[uuid.UUID, V], key *uuid.UUID) (*V, error) {
	if key == nil {
		return nil, nil
	}
	v, ok, err := load(ctx, l, *key)
	if !ok {
		return nil, err
	}
	return &v, nil
}

// mustLoad returns the value for key, which must exist (a foreign key).
func mustLoad[V any](ctx context.Context, l *dataloadgen.Loader[uuid.UUID, V], key uuid.UUID) (V, error) {
	v, ok, err := load(ctx, l, key)
	if err == nil && !ok {
		err = errors.New("referenced row missing")
	}
	return v, err
}
