package gateway_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// gpu is the device place claims for the instance.
const gpu = "0000:65:00.0"

// gpuHealth reads the device's health columns, as text ("" for NULL).
func (e *env) gpuHealth() (unhealthySince, reason, lastXid string) {
	e.t.Helper()
	var since, r, last *string
	err := e.db.QueryRow(context.Background(), "SELECT unhealthy_since::text, health_reason, last_xid::text FROM host_gpus WHERE host_id = $1 AND address = $2",
		e.host, gpu).Scan(&since, &r, &last)
	if err != nil {
		e.t.Fatal(err)
	}
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	return deref(since), deref(r), deref(last)
}

func (e *env) observed() string {
	e.t.Helper()
	var s *string
	e.db.QueryRow(context.Background(), "SELECT observed_state FROM instances WHERE id = $1", e.instance).Scan(&s)
	if s == nil {
		return ""
	}
	return *s
}

func (e *env) stateReason() string {
	e.t.Helper()
	var s string
	e.db.QueryRow(context.Background(), "SELECT state_reason FROM instances WHERE id = $1", e.instance).Scan(&s)
	return s
}

// reportXids posts a current report in which the instance runs, with xids.
func (e *env) reportXids(gen int64, xids ...hostproto.Xid) {
	e.t.Helper()
	resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: gen,
		Instances: []hostproto.InstanceStatus{{ID: ids.Encode(ids.Instance, e.instance), State: hostproto.StateRunning}}, Xids: xids})
	if resp.StatusCode != 204 {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("report: %d %s", resp.StatusCode, b)
	}
}

// handlerFailures reads bc_gateway_report_handler_failures_total of a
// handler from the gateway's collectors.
func (e *env) handlerFailures(handler string) float64 {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.gw.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "bc_gateway_report_handler_failures_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelOf(m, "handler") == handler {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestXidHandler: a fatal Xid marks the device unhealthy and gives the
// instance holding it a reason, a live event and an audit row; a later
// one keeps the first mark; a non-fatal one only becomes the last Xid.
func TestXidHandler(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := e.place("running")
	at := time.Now().UTC().Truncate(time.Second)

	t.Run("a non-fatal Xid is only noted", func(t *testing.T) {
		e.reportXids(gen, hostproto.Xid{Address: gpu, Code: 13, Message: "Graphics SM Warp Exception", At: at})
		since, reason, last := e.gpuHealth()
		if since != "" || reason != "" || last != "13" {
			t.Fatalf("after Xid 13: unhealthy since %q, reason %q, last Xid %q", since, reason, last)
		}
		if r := e.stateReason(); strings.Contains(r, "GPU") {
			t.Fatalf("state reason %q after a non-fatal Xid", r)
		}
	})
	t.Run("a fatal Xid marks the device and tells of its instance", func(t *testing.T) {
		e.reportXids(gen, hostproto.Xid{Address: gpu, Code: 79, Message: "GPU has fallen off the bus.", At: at.Add(time.Second)})
		since, reason, last := e.gpuHealth()
		if since == "" || reason != "Xid 79: GPU has fallen off the bus." || last != "79" {
			t.Fatalf("after Xid 79: unhealthy since %q, reason %q, last Xid %q", since, reason, last)
		}
		want := "GPU " + gpu + " on host hv-1 is unhealthy (Xid 79: GPU has fallen off the bus.)"
		if r := e.stateReason(); !strings.HasPrefix(r, want) {
			t.Fatalf("state reason %q, want it to start %q", r, want)
		}
		var audits, events int
		e.db.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action = $1 AND target_id = $2 AND principal_id IS NULL AND details->>'xid' = '79'",
			gateway.ActGPUFailed, e.instance).Scan(&audits)
		e.db.QueryRow(context.Background(), "SELECT count(*) FROM outbox WHERE key = $1 AND payload->>'type' = 'UPDATED' AND payload::text LIKE '%fallen off the bus%'",
			e.instance).Scan(&events)
		if audits != 1 || events != 1 {
			t.Fatalf("%d audit rows, %d live events of the instance; want 1 and 1", audits, events)
		}
	})
	t.Run("a device keeps its first mark", func(t *testing.T) {
		e.reportXids(gen, hostproto.Xid{Address: gpu, Code: 48, Message: "DBE", At: at.Add(2 * time.Second)})
		_, reason, last := e.gpuHealth()
		var audits int
		e.db.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action = $1", gateway.ActGPUFailed).Scan(&audits)
		if reason != "Xid 79: GPU has fallen off the bus." || last != "48" || audits != 1 {
			t.Fatalf("reason %q, last Xid %q, %d audit rows", reason, last, audits)
		}
	})
}

// TestFailingHandler: a report handler that fails is rolled back alone —
// the Xid handler's mark is undone while the instance observations of the
// same report stand — and the report is still accepted, the failure
// counted.
func TestFailingHandler(t *testing.T) {
	t.Parallel()
	e := setup(t, gateway.FailHandler("xids"))
	gen := e.place("running")
	e.reportXids(gen, hostproto.Xid{Address: gpu, Code: 79, Message: "GPU has fallen off the bus.", At: time.Now()})
	if got := e.observed(); got != "running" {
		t.Fatalf("observed %q, want running: the instance handler's writes were lost with the Xid handler's", got)
	}
	if since, reason, last := e.gpuHealth(); since != "" || reason != "" || last != "" {
		t.Fatalf("the failed Xid handler's writes stand: unhealthy since %q, reason %q, last Xid %q", since, reason, last)
	}
	if r := e.stateReason(); strings.Contains(r, "GPU") {
		t.Fatalf("state reason %q from a rolled-back handler", r)
	}
	if n := e.handlerFailures("xids"); n != 1 {
		t.Fatalf("xids handler failures = %v, want 1", n)
	}
	if n := e.handlerFailures("instances"); n != 0 {
		t.Fatalf("instances handler failures = %v, want 0", n)
	}
}

// TestXidChecks: an Xid the protocol does not allow, or of a device that
// is not the host's, is 400 naming the field, and nothing of the report is
// stored.
func TestXidChecks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := e.place("running")
	id := ids.Encode(ids.Instance, e.instance)
	at := `"` + time.Now().UTC().Format(time.RFC3339) + `"`
	body := func(xids string) string {
		return `{"protocol":` + strconv.Itoa(hostproto.Version) + `,"generation":` + strconv.FormatInt(gen, 10) +
			`,"instances":[{"id":"` + id + `","state":"running"}],"xids":[` + xids + `]}`
	}
	many := strings.TrimSuffix(strings.Repeat(`{"address":"`+gpu+`","code":13,"at":`+at+`},`, hostproto.MaxXids+1), ",")
	cases := []struct {
		name, xids, field string
	}{
		{"code 0", `{"address":"` + gpu + `","code":0,"at":` + at + `}`, "xids[0].code"},
		{"code 1000", `{"address":"` + gpu + `","code":1000,"at":` + at + `}`, "xids[0].code"},
		{"a code that is not a number", `{"address":"` + gpu + `","code":"79","at":` + at + `}`, "xids.code"},
		{"not a PCI address", `{"address":"PCI:0000:65:00","code":79,"at":` + at + `}`, "xids[0].address"},
		{"another host's device", `{"address":"` + gpu + `","code":13,"at":` + at + `},{"address":"0000:66:00.0","code":79,"at":` + at + `}`, "xids[1].address"},
		{"no time", `{"address":"` + gpu + `","code":79}`, "xids[0].at"},
		{"NUL in a message", `{"address":"` + gpu + `","code":79,"message":"a\u0000","at":` + at + `}`, "xids[0].message"},
		{"a long message", `{"address":"` + gpu + `","code":79,"message":"` + strings.Repeat("m", hostproto.MaxXidMessage+1) + `","at":` + at + `}`, "xids[0].message"},
		{fmt.Sprintf("%d events", hostproto.MaxXids+1), many, "xids"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.post(body(c.xids))
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.HasPrefix(string(b), c.field+": ") {
				t.Fatalf("%d %q, want 400 naming %s", resp.StatusCode, b, c.field)
			}
		})
	}
	if since, reason, last := e.gpuHealth(); since != "" || reason != "" || last != "" || e.observed() != "" {
		t.Fatalf("stored from refused reports: unhealthy since %q, reason %q, last Xid %q, observed %q", since, reason, last, e.observed())
	}
	t.Run("an older protocol's report carries no Xids", func(t *testing.T) {
		resp := e.requestAt(hostproto.CommandsVersion, "POST", hostproto.ReportPathOf(hostproto.CommandsVersion), e.credential,
			hostproto.Report{Protocol: hostproto.CommandsVersion, Generation: gen, Xids: []hostproto.Xid{{Address: gpu, Code: 79, At: time.Now()}}})
		if resp.StatusCode != 204 {
			t.Fatalf("version %d report: %d", hostproto.CommandsVersion, resp.StatusCode)
		}
		if since, _, last := e.gpuHealth(); since != "" || last != "" {
			t.Fatalf("a version %d report's Xids were recorded", hostproto.CommandsVersion)
		}
	})
}
