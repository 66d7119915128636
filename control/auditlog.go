package control

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/sqlc"
)

// AuditFilter narrows the audit trail; nil fields do not filter.
type AuditFilter struct {
	// TenantID is honoured for operators; members always see only their tenant.
	TenantID *uuid.UUID
	Action   *string
	TargetID *uuid.UUID
	Outcome  *string
}

// AuditEvents lists the audit trail the caller may see, newest first.
func (s *Service) AuditEvents(ctx context.Context, f AuditFilter, page Page[int64]) (items []domain.AuditEvent, hasNext bool, err error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, false, err
	}
	lim, err := page.limit()
	if err != nil {
		return nil, false, err
	}
	tenant := f.TenantID
	if !p.IsOperator() {
		tenant = p.TenantFilter()
	}
	rows, err := s.q.ListAuditEvents(ctx, sqlc.ListAuditEventsParams{
		Tenant: tenant, Action: f.Action, Target: f.TargetID, Outcome: f.Outcome, After: page.After, Lim: lim + 1,
	})
	if err != nil {
		return nil, false, fmt.Errorf("list audit events: %w", err)
	}
	rows, hasNext = trim(rows, lim)
	return mapRows(rows, domain.AuditEventFromRow), hasNext, nil
}

// CountAuditEvents counts what AuditEvents with f pages through.
func (s *Service) CountAuditEvents(ctx context.Context, f AuditFilter) (int, error) {
	p, err := caller(ctx)
	if err != nil {
		return 0, err
	}
	tenant := f.TenantID
	if !p.IsOperator() {
		tenant = p.TenantFilter()
	}
	n, err := s.q.CountAuditEvents(ctx, sqlc.CountAuditEventsParams{Tenant: tenant, Action: f.Action, Target: f.TargetID, Outcome: f.Outcome})
	if err != nil {
		return 0, fmt.Errorf("count audit events: %w", err)
	}
	return int(n), nil
}

// AuditEvent returns one audit event the caller may see.
func (s *Service) AuditEvent(ctx context.Context, id int64) (domain.AuditEvent, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.AuditEvent{}, err
	}
	ev, err := s.q.GetAuditEvent(ctx, id)
	if err != nil {
		return domain.AuditEvent{}, notFound(err, "id", "audit event")
	}
	if !p.IsOperator() && (ev.TenantID == nil || *ev.TenantID != p.TenantID) {
		return domain.AuditEvent{}, apierr.NotFoundf("id", "audit event not found")
	}
	return domain.AuditEventFromRow(ev), nil
}
