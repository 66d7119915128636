package graph_test

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/server"
)

// TestSandboxTemplateMetrics reads a template's metrics, through GraphQL
// and /metrics, in a known scenario: a warm pool of 4 (one ready, one
// booting left), 2 warm sandboxes that ran 10 and 30 ms after their
// create, 2 cold ones, one of which ran 2 s after.
func TestSandboxTemplateMetrics(t *testing.T) {
	t.Parallel()
	e, w, tpl := setupSandboxes(t)
	e.must(w.member, updateTemplate, map[string]any{"in": map[string]any{"id": tpl.ID, "warmCount": 4}}, nil)
	e.warm(tpl.ID, 4)
	var warm []string
	rows, err := e.db.Query(context.Background(), "SELECT id FROM instances WHERE warm_template_id IS NOT NULL ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id [16]byte
		rows.Scan(&id)
		warm = append(warm, ids.Encode(ids.Instance, id))
	}
	for _, id := range warm[:3] {
		e.step(id, "PAUSED", "")
	}
	own := []map[string]any{{"name": "OWN", "value": "x"}}
	w1, w2 := e.sandbox(w.member, map[string]any{"templateId": tpl.ID}), e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	c1, c2 := e.sandbox(w.member, map[string]any{"templateId": tpl.ID, "env": own}), e.sandbox(w.member, map[string]any{"templateId": tpl.ID, "env": own})
	for _, s := range []sandboxView{w1, w2, c1} {
		e.step(s.Instance.ID, "RUNNING", "")
	}
	if w1.StartedFrom != "WARM" || w2.StartedFrom != "WARM" || c2.StartedFrom != "COLD" {
		t.Fatalf("started from %s %s %s", w1.StartedFrom, w2.StartedFrom, c2.StartedFrom)
	}
	// Each ran so long after its create.
	for id, ms := range map[string]int{w1.ID: 10, w2.ID: 30, c1.ID: 2000} {
		if _, err := e.db.Exec(context.Background(), `UPDATE sandboxes SET created_at = now() - interval '1 minute' WHERE id = $1;`, decode(t, ids.Sandbox, id)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Exec(context.Background(), `UPDATE sandbox_events e SET at = s.created_at + make_interval(secs => $2::float8 / 1000)
			FROM sandboxes s WHERE s.id = e.sandbox_id AND e.sandbox_id = $1 AND e.type = 'STARTED'`, decode(t, ids.Sandbox, id), ms); err != nil {
			t.Fatal(err)
		}
	}

	type times struct {
		Count    int
		P50, P99 *float64
	}
	var out struct {
		SandboxTemplate struct {
			Metrics struct {
				Sandboxes []struct {
					State string
					Count int
				}
				CreatedWarm, CreatedCold                    int
				WarmHitRatio                                *float64
				WarmTarget, WarmFree, WarmReady, WarmClaims int
				StartWarm, StartCold                        times
			}
		}
	}
	e.must(w.member, `query($id: ID!) { sandboxTemplate(id: $id) { metrics { sandboxes { state count } createdWarm createdCold warmHitRatio
		warmTarget warmFree warmReady warmClaims startWarm { count p50 p99 } startCold { count p50 p99 } } } }`, map[string]any{"id": tpl.ID}, &out)
	m := out.SandboxTemplate.Metrics
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 0.0005 }
	if len(m.Sandboxes) != 2 || m.Sandboxes[0] != (struct {
		State string
		Count int
	}{"RUNNING", 3}) || m.Sandboxes[1].State != "STARTING" || m.Sandboxes[1].Count != 1 ||
		m.CreatedWarm != 2 || m.CreatedCold != 2 || !near(m.WarmHitRatio, 0.5) ||
		m.WarmTarget != 4 || m.WarmFree != 2 || m.WarmReady != 1 || m.WarmClaims != 2 ||
		m.StartWarm.Count != 2 || !near(m.StartWarm.P50, 0.020) || !near(m.StartWarm.P99, 0.0298) ||
		m.StartCold.Count != 1 || !near(m.StartCold.P50, 2) || !near(m.StartCold.P99, 2) {
		t.Errorf("metrics = %+v (warm p50 %v p99 %v, cold p50 %v)", m, deref(m.StartWarm.P50), deref(m.StartWarm.P99), deref(m.StartCold.P50))
	}

	t.Run("on /metrics", func(t *testing.T) {
		srv := httptest.NewServer(server.New(server.Config{DB: e.db, Service: e.svc, Logger: e.log}))
		defer srv.Close()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		tl := `template="` + tpl.ID + `"`
		for _, want := range []string{
			`bc_sandboxes{state="RUNNING",` + tl + `} 3`,
			`bc_sandboxes{state="STARTING",` + tl + `} 1`,
			`bc_sandbox_warm_target{` + tl + `} 4`,
			`bc_sandbox_warm_free{` + tl + `} 2`,
			`bc_sandbox_warm_ready{` + tl + `} 1`,
			`bc_sandbox_warm_claims{` + tl + `} 2`,
			`bc_sandbox_warm_hit_ratio{` + tl + `} 0.5`,
			`bc_sandboxes_created{started_from="COLD",` + tl + `} 2`,
			`bc_sandbox_start_seconds{quantile="0.5",started_from="WARM",` + tl + `} 0.02`,
			`bc_sandbox_start_seconds{quantile="0.5",started_from="COLD",` + tl + `} 2`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %s in:\n%s", want, grepLines(string(body), "bc_sandbox"))
			}
		}
	})
	t.Run("another tenant's template is NOT_FOUND", func(t *testing.T) {
		b := e.world("beta")
		if r := e.do(b.member, `query($id: ID!) { sandboxTemplate(id: $id) { metrics { warmFree } } }`, map[string]any{"id": tpl.ID}); r.code() != "NOT_FOUND" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
