package control

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/sqlc"
)

// TemplateMetrics is what a template's sandboxes and warm pool did over a
// window, and how they are now.
type TemplateMetrics struct {
	TemplateID uuid.UUID
	// Since starts the window Starts and WarmClaims cover.
	Since time.Time
	// Live counts the sandboxes that have not ended, by state.
	Live map[string]int
	// Starts are the sandboxes created in the window, by how they
	// started (domain.StartedWarm, domain.StartedCold).
	Starts map[string]StartTimes
	// WarmTarget is the template's warm count; WarmFree its free warm
	// instances of its current instance version, WarmReady those of them
	// paused, ready to be claimed.
	WarmTarget, WarmFree, WarmReady int
	// WarmClaims counts the warm instances claimed in the window.
	WarmClaims int
}

// StartTimes are the sandboxes created in a window, and the time from
// their creation to RUNNING of those that ran.
type StartTimes struct {
	Created, Started int
	P50, P99         time.Duration
}

// WarmHitRatio is the share of the sandboxes created in the window that
// claimed a warm instance; false when none was created.
func (m TemplateMetrics) WarmHitRatio() (float64, bool) {
	warm, cold := m.Starts[domain.StartedWarm].Created, m.Starts[domain.StartedCold].Created
	if warm+cold == 0 {
		return 0, false
	}
	return float64(warm) / float64(warm+cold), true
}

// SandboxTemplateMetrics returns the metrics of a template the caller may
// see, over the window from since. The template's owner and operators
// count every tenant's sandboxes and claims; another tenant's member (of a
// public template) its own tenant's.
func (s *Service) SandboxTemplateMetrics(ctx context.Context, template uuid.UUID, since time.Time) (TemplateMetrics, error) {
	p, err := caller(ctx)
	if err != nil {
		return TemplateMetrics{}, err
	}
	t, err := s.SandboxTemplate(ctx, template)
	if err != nil {
		return TemplateMetrics{}, err
	}
	var tenant *uuid.UUID
	if !p.IsOperator() && (t.TenantID == nil || *t.TenantID != p.TenantID) {
		tenant = &p.TenantID
	}
	all, err := s.sandboxMetrics(ctx, &template, tenant, since)
	if err != nil {
		return TemplateMetrics{}, err
	}
	if m, ok := all[template]; ok {
		return *m, nil
	}
	return newTemplateMetrics(template, since), nil
}

// AllSandboxMetrics returns the metrics of every live template over the
// window from since, for the operators' /metrics. It checks no caller.
func (s *Service) AllSandboxMetrics(ctx context.Context, since time.Time) ([]TemplateMetrics, error) {
	all, err := s.sandboxMetrics(ctx, nil, nil, since)
	if err != nil {
		return nil, err
	}
	out := make([]TemplateMetrics, 0, len(all))
	for _, m := range all {
		out = append(out, *m)
	}
	return out, nil
}

func newTemplateMetrics(template uuid.UUID, since time.Time) TemplateMetrics {
	return TemplateMetrics{TemplateID: template, Since: since, Live: map[string]int{}, Starts: map[string]StartTimes{}}
}

// sandboxMetrics reads the metrics of one template (nil: every live
// one), counting one tenant's sandboxes (nil: all), by template.
func (s *Service) sandboxMetrics(ctx context.Context, template, tenant *uuid.UUID, since time.Time) (map[uuid.UUID]*TemplateMetrics, error) {
	out := map[uuid.UUID]*TemplateMetrics{}
	of := func(id uuid.UUID) *TemplateMetrics {
		if out[id] == nil {
			m := newTemplateMetrics(id, since)
			out[id] = &m
		}
		return out[id]
	}
	fill, err := s.q.WarmPoolFill(ctx, template)
	if err != nil {
		return nil, fmt.Errorf("read warm pool fill: %w", err)
	}
	for _, r := range fill {
		m := of(r.TemplateID)
		m.WarmTarget, m.WarmFree, m.WarmReady = int(r.WarmCount), int(r.Free), int(r.Ready)
	}
	live, err := s.q.LiveSandboxesByState(ctx, sqlc.LiveSandboxesByStateParams{Template: template, Tenant: tenant})
	if err != nil {
		return nil, fmt.Errorf("count live sandboxes: %w", err)
	}
	for _, r := range live {
		of(r.TemplateID).Live[r.State] = int(r.N)
	}
	claims, err := s.q.WarmClaims(ctx, sqlc.WarmClaimsParams{Since: &since, Template: template, Tenant: tenant})
	if err != nil {
		return nil, fmt.Errorf("count warm claims: %w", err)
	}
	for _, r := range claims {
		of(r.TemplateID).WarmClaims = int(r.N)
	}
	starts, err := s.q.SandboxStarts(ctx, sqlc.SandboxStartsParams{Since: since, Template: template, Tenant: tenant})
	if err != nil {
		return nil, fmt.Errorf("read sandbox start times: %w", err)
	}
	for _, r := range starts {
		of(r.TemplateID).Starts[r.StartedFrom] = StartTimes{
			Created: int(r.Created), Started: int(r.Started), P50: seconds2d(r.P50), P99: seconds2d(r.P99),
		}
	}
	return out, nil
}

// seconds2d is a duration of s seconds.
func seconds2d(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
