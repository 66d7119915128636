package control

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// TenantDeletedHandler is one module's part in deleting a tenant. It runs
// in the deleteTenant transaction, after the tenant is marked deleted and
// locked, and ends what the module holds of the tenant so that the API no
// longer shows it: it marks its objects deleted and wakes the reconciler
// to release what they hold (allocations, leases, servers, domains,
// files). It returns how many objects it ended; an error rolls the whole
// deletion back.
type TenantDeletedHandler func(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error)

// tenantDeleted is the ordered list of tenant-deleted handlers: they run in
// the order they were registered, so a module registers after those whose
// objects its own lock after (sandboxes before their instances).
type tenantDeleted struct {
	handlers []namedHandler
}

type namedHandler struct {
	name string
	fn   TenantDeletedHandler
}

// register appends h under name; name+"Deleted" is the key of its count in
// the deletion's audit event.
func (r *tenantDeleted) register(name string, h TenantDeletedHandler) {
	r.handlers = append(r.handlers, namedHandler{name: name, fn: h})
}

// run calls every handler in order and returns each one's count by its
// audit key; the first error stops it.
func (r *tenantDeleted) run(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (map[string]any, error) {
	counts := make(map[string]any, len(r.handlers))
	for _, h := range r.handlers {
		n, err := h.fn(ctx, q, tenant)
		if err != nil {
			return nil, fmt.Errorf("tenant-deleted handler %s: %w", h.name, err)
		}
		counts[h.name+"Deleted"] = n
	}
	return counts, nil
}

// OnTenantDeleted registers a module's tenant-deleted handler, to run after
// those registered before it. Register while wiring the process, before
// the Service serves.
func (s *Service) OnTenantDeleted(name string, h TenantDeletedHandler) {
	s.tenantDeleted.register(name, h)
}
