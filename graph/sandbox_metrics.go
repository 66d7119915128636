package graph

import (
	"slices"
	"strings"
	"time"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/graph/model"
)

// DefaultMetricsWindow is the window SandboxTemplate.metrics covers when
// it is given no start.
const DefaultMetricsWindow = time.Hour

// templateMetrics shows a template's metrics at the API.
func templateMetrics(m control.TemplateMetrics) model.SandboxTemplateMetrics {
	out := model.SandboxTemplateMetrics{
		Since: m.Since, Sandboxes: []model.SandboxStateCount{},
		CreatedWarm: m.Starts[domain.StartedWarm].Created, CreatedCold: m.Starts[domain.StartedCold].Created,
		WarmTarget: m.WarmTarget, WarmFree: m.WarmFree, WarmReady: m.WarmReady, WarmClaims: m.WarmClaims,
		StartWarm: startTimes(m.Starts[domain.StartedWarm]), StartCold: startTimes(m.Starts[domain.StartedCold]),
	}
	if r, ok := m.WarmHitRatio(); ok {
		out.WarmHitRatio = &r
	}
	for state, n := range m.Live {
		out.Sandboxes = append(out.Sandboxes, model.SandboxStateCount{State: model.SandboxState(state), Count: n})
	}
	slices.SortFunc(out.Sandboxes, func(a, b model.SandboxStateCount) int { return strings.Compare(string(a.State), string(b.State)) })
	return out
}

func startTimes(s control.StartTimes) model.SandboxStartTimes {
	out := model.SandboxStartTimes{Count: s.Started}
	if s.Started > 0 {
		p50, p99 := s.P50.Seconds(), s.P99.Seconds()
		out.P50, out.P99 = &p50, &p99
	}
	return out
}
