package control

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/sqlc"
)

// SandboxEvents pages oldest first through the events of a sandbox the
// caller may see: its history, kept after it ended. The cursor is an
// event's version.
func (s *Service) SandboxEvents(ctx context.Context, sandbox uuid.UUID, page Page[int64]) (items []events.SandboxEvent, hasNext bool, err error) {
	if _, err := s.Sandbox(ctx, sandbox); err != nil {
		return nil, false, err
	}
	lim, err := page.limit()
	if err != nil {
		return nil, false, err
	}
	var after int64
	if page.After != nil {
		after = *page.After
	}
	rows, err := s.q.ListSandboxEvents(ctx, sqlc.ListSandboxEventsParams{SandboxID: sandbox, AfterSeq: after, Lim: lim + 1})
	if err != nil {
		return nil, false, fmt.Errorf("list sandbox events: %w", err)
	}
	rows, hasNext = trim(rows, lim)
	items, err = sandboxEvents(rows)
	return items, hasNext, err
}

// CountSandboxEvents counts the events of a sandbox the caller may see.
func (s *Service) CountSandboxEvents(ctx context.Context, sandbox uuid.UUID) (int, error) {
	if _, err := s.Sandbox(ctx, sandbox); err != nil {
		return 0, err
	}
	n, err := s.q.CountSandboxEvents(ctx, sandbox)
	if err != nil {
		return 0, fmt.Errorf("count sandbox events: %w", err)
	}
	return int(n), nil
}

// SandboxWatchFilter narrows a sandboxEvents subscription; zero fields do
// not filter.
type SandboxWatchFilter struct {
	IDs        []uuid.UUID
	TemplateID *uuid.UUID
}

// CurrentSandboxes reads what a sandboxEvents subscription with
// includeCurrent shows the caller first: each live sandbox matching f as
// it is now, as an event of its last event's type and version.
func (s *Service) CurrentSandboxes(ctx context.Context, f SandboxWatchFilter) ([]events.SandboxEvent, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.CurrentSandboxes(ctx, sqlc.CurrentSandboxesParams{Tenant: p.TenantFilter(), Ids: orNone(f.IDs), Template: f.TemplateID})
	if err != nil {
		return nil, fmt.Errorf("read watched sandboxes: %w", err)
	}
	out := make([]events.SandboxEvent, len(rows))
	for i, r := range rows {
		sbx := domain.SandboxFromRow(r.SandboxView)
		out[i] = events.SandboxEvent{Kind: events.KindSandbox, Type: events.Type(r.LastType), Sandbox: events.ViewSandbox(sbx),
			Version: r.LastSeq, At: sbx.UpdatedAt}
	}
	return out, nil
}

// SandboxEventsSince reads the events of the sandboxes matching f
// recorded since a time, for a subscription's resync: they are replayed,
// so a subscriber misses no step. The caller sees its tenant's only.
func (s *Service) SandboxEventsSince(ctx context.Context, f SandboxWatchFilter, since time.Time) ([]events.SandboxEvent, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.SandboxEventsSince(ctx, sqlc.SandboxEventsSinceParams{Tenant: p.TenantFilter(), Ids: orNone(f.IDs), Since: since})
	if err != nil {
		return nil, fmt.Errorf("read sandbox events since %s: %w", since, err)
	}
	return sandboxEvents(rows)
}

func sandboxEvents(rows []sqlc.SandboxEvent) ([]events.SandboxEvent, error) {
	out := make([]events.SandboxEvent, len(rows))
	for i, r := range rows {
		ev, err := events.SandboxEventFromRow(r)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

// orNone is ids, or an empty list for nil: a query's "any".
func orNone(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}
