package graph_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
)

const usageQuery = `query($from: DateTime!, $to: DateTime!, $by: [UsageGroup!], $t: ID) {
	usage(from: $from, to: $to, groupBy: $by, tenantId: $t) {
		tenantId poolId flavorId instanceId day
		runningSeconds pausedSeconds stoppedSeconds otherSeconds vcpuHours memoryGibHours diskGibHours gpuHours } }`

type usageTotal struct {
	TenantID, PoolID, FlavorID, InstanceID, Day                 *string
	RunningSeconds, PausedSeconds, StoppedSeconds, OtherSeconds float64
	VcpuHours, MemoryGibHours, DiskGibHours, GpuHours           float64
}

// usageWorld is two tenants' metered rows on one day and the next.
type usageWorld struct {
	a, b       world
	insA, insB string
	day        time.Time
}

// meter writes a usage row as the vps.usage job does.
func (e *env) meter(w world, instance uuid.UUID, start time.Time, running, paused, stopped, other float64, vcpus, memoryMB, diskGB, gpus int) {
	e.t.Helper()
	dec := func(k ids.Kind, s string) uuid.UUID {
		id, ok := ids.Decode(k, s)
		if !ok {
			e.t.Fatalf("decode %s", s)
		}
		return id
	}
	_, err := e.db.Exec(context.Background(), `INSERT INTO usage_records (instance_id, interval_start, interval_end, tenant_id,
		pool_id, flavor_id, running_seconds, paused_seconds, stopped_seconds, other_seconds, vcpus, memory_mb, disk_gb, gpu_count)
		VALUES ($1, $2::timestamptz, $2::timestamptz + interval '5 minutes', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		instance, start, dec(ids.Tenant, w.tenant), dec(ids.Pool, w.pool), dec(ids.Flavor, w.flavor),
		running, paused, stopped, other, vcpus, memoryMB, diskGB, gpus)
	if err != nil {
		e.t.Fatal(err)
	}
}

func setupUsage(t *testing.T) (*env, usageWorld) {
	e := setup(t)
	u := usageWorld{a: e.world("acme"), b: e.world("bolt"), day: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	insA, insB := uuid.New(), uuid.New()
	u.insA, u.insB = ids.Encode(ids.Instance, insA), ids.Encode(ids.Instance, insB)
	// acme's instance: running 2 intervals on day 1, then stopped
	// half an interval and paused the rest on day 2; 2 vCPUs, 2 GiB,
	// 20 GB, 1 GPU.
	e.meter(u.a, insA, u.day, 300, 0, 0, 0, 2, 2048, 20, 1)
	e.meter(u.a, insA, u.day.Add(5*time.Minute), 240, 0, 0, 60, 2, 2048, 20, 1)
	e.meter(u.a, insA, u.day.Add(24*time.Hour), 0, 150, 150, 0, 2, 2048, 20, 1)
	// bolt's: one interval running, 1 vCPU, 1 GiB, 10 GB.
	e.meter(u.b, insB, u.day, 300, 0, 0, 0, 1, 1024, 10, 0)
	return e, u
}

func (e *env) usage(token string, from, to time.Time, by []string, tenant any) ([]usageTotal, response) {
	e.t.Helper()
	r := e.do(token, usageQuery, map[string]any{"from": from, "to": to, "by": by, "t": tenant})
	var out struct{ Usage []usageTotal }
	if len(r.Errors) == 0 {
		decodeInto(e.t, r.Data, &out)
	}
	return out.Usage, r
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Operators see every tenant's usage grouped as asked, in vCPU-, GiB- and
// GPU-hours by what each state bills; members see only their tenant's.
func TestUsageTotals(t *testing.T) {
	t.Parallel()
	e, u := setupUsage(t)
	from, to := u.day, u.day.Add(48*time.Hour)

	byTenant, r := e.usage(e.operator, from, to, []string{"TENANT"}, nil)
	if r.code() != "" || len(byTenant) != 2 {
		t.Fatalf("operator by tenant: %v %+v", r.Errors, byTenant)
	}
	got := map[string]usageTotal{}
	for _, g := range byTenant {
		got[*g.TenantID] = g
		if g.PoolID != nil || g.Day != nil || g.InstanceID != nil {
			t.Errorf("keys not grouped by are set: %+v", g)
		}
	}
	a := got[u.a.tenant]
	// RUNNING 540 s bills 2 vCPUs; RUNNING and PAUSED (690 s) bill 2 GiB
	// and 1 GPU; RUNNING, PAUSED and STOPPED (840 s) bill 20 GB.
	if !approx(a.RunningSeconds, 540) || !approx(a.PausedSeconds, 150) || !approx(a.StoppedSeconds, 150) || !approx(a.OtherSeconds, 60) ||
		!approx(a.VcpuHours, 2*540/3600.0) || !approx(a.MemoryGibHours, 2*690/3600.0) || !approx(a.GpuHours, 690/3600.0) ||
		!approx(a.DiskGibHours, 20*840/3600.0) {
		t.Errorf("acme's total: %+v", a)
	}
	if b := got[u.b.tenant]; !approx(b.VcpuHours, 300/3600.0) || !approx(b.MemoryGibHours, 300/3600.0) || b.GpuHours != 0 {
		t.Errorf("bolt's total: %+v", b)
	}

	byDay, _ := e.usage(e.operator, from, to, []string{"DAY", "INSTANCE"}, u.a.tenant)
	if len(byDay) != 2 || *byDay[0].InstanceID != u.insA || !strings.HasPrefix(*byDay[0].Day, "2026-03-01T00:00:00") ||
		!approx(byDay[0].RunningSeconds, 540) || !strings.HasPrefix(*byDay[1].Day, "2026-03-02T00:00:00") || !approx(byDay[1].PausedSeconds, 150) {
		t.Errorf("acme by day and instance: %+v", byDay)
	}

	// An interval counts in the range it starts in.
	firstOnly, _ := e.usage(e.operator, from, from.Add(5*time.Minute), nil, nil)
	if len(firstOnly) != 1 || !approx(firstOnly[0].RunningSeconds, 600) {
		t.Errorf("the first interval's total: %+v", firstOnly)
	}

	mine, r := e.usage(u.a.member, from, to, []string{"TENANT"}, nil)
	if r.code() != "" || len(mine) != 1 || *mine[0].TenantID != u.a.tenant {
		t.Errorf("a member sees %+v (%v), want its own tenant's only", mine, r.Errors)
	}
	if _, r := e.usage(u.a.member, from, to, nil, u.b.tenant); r.code() != "NOT_FOUND" || r.Errors[0].Extensions.Field != "tenantId" {
		t.Errorf("a member asking for another tenant: %+v, want NOT_FOUND on tenantId", r.Errors)
	}
}

// Bad input is refused with a code, naming the field.
func TestUsageRefusesBadInput(t *testing.T) {
	t.Parallel()
	e, u := setupUsage(t)
	for _, c := range []struct {
		name     string
		from, to time.Time
		by       []string
		field    string
	}{
		{"to before from", u.day, u.day.Add(-time.Hour), nil, "to"},
		{"an empty range", u.day, u.day, nil, "to"},
		{"over a year", u.day, u.day.Add(367 * 24 * time.Hour), nil, "to"},
		{"an unknown group", u.day, u.day.Add(time.Hour), []string{"REGION"}, ""},
	} {
		if _, r := e.usage(e.operator, c.from, c.to, c.by, nil); r.code() != "INVALID_INPUT" || (c.field != "" && r.Errors[0].Extensions.Field != c.field) {
			t.Errorf("%s: %+v, want INVALID_INPUT on %q", c.name, r.Errors, c.field)
		}
	}
}

// csvGet fetches /usage.csv with params as token.
func (e *env) csvGet(token string, params url.Values) (*http.Response, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.url+"/usage.csv?"+params.Encode(), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		body.WriteString(string(buf[:n]))
		if err != nil {
			break
		}
	}
	return resp, []byte(body.String())
}

// The CSV at /usage.csv has the numbers the API has, for the bearer
// token's principal, and refuses what the API refuses.
func TestUsageCSVMatchesTheAPI(t *testing.T) {
	t.Parallel()
	e, u := setupUsage(t)
	from, to := u.day, u.day.Add(48*time.Hour)
	for _, c := range []struct {
		token string
		by    []string
	}{{e.operator, []string{"TENANT", "DAY"}}, {e.operator, []string{"POOL", "FLAVOR", "INSTANCE"}}, {u.b.member, nil}} {
		api, r := e.usage(c.token, from, to, c.by, nil)
		if r.code() != "" {
			t.Fatal(r.Errors)
		}
		resp, body := e.csvGet(c.token, url.Values{"from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}, "groupBy": {strings.Join(c.by, ",")}})
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
			t.Fatalf("GET /usage.csv by %v: HTTP %d %s", c.by, resp.StatusCode, body)
		}
		recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(api)+1 {
			t.Fatalf("by %v: %d CSV rows, %d from the API", c.by, len(recs)-1, len(api))
		}
		for i, g := range api {
			want := map[string]string{}
			for k, v := range map[string]*string{"tenant_id": g.TenantID, "pool_id": g.PoolID, "flavor_id": g.FlavorID, "instance_id": g.InstanceID} {
				if v != nil {
					want[k] = *v
				}
			}
			nums := map[string]float64{"running_seconds": g.RunningSeconds, "paused_seconds": g.PausedSeconds, "stopped_seconds": g.StoppedSeconds,
				"other_seconds": g.OtherSeconds, "vcpu_hours": g.VcpuHours, "memory_gib_hours": g.MemoryGibHours, "disk_gib_hours": g.DiskGibHours, "gpu_hours": g.GpuHours}
			for j, col := range recs[0] {
				cell := recs[i+1][j]
				switch n, isNum := nums[col]; {
				case isNum:
					if f, err := strconv.ParseFloat(cell, 64); err != nil || f != n {
						t.Errorf("by %v row %d %s: CSV %q, API %v", c.by, i, col, cell, n)
					}
				case col == "day":
					if d, err := time.Parse(time.RFC3339, cell); err != nil || g.Day == nil || !sameTime(d, *g.Day) {
						t.Errorf("by %v row %d day: CSV %q, API %v", c.by, i, cell, g.Day)
					}
				default:
					if cell != want[col] {
						t.Errorf("by %v row %d %s: CSV %q, API %q", c.by, i, col, cell, want[col])
					}
				}
			}
		}
	}

	params := url.Values{"from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
	if resp, _ := e.csvGet("", params); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: HTTP %d, want 401", resp.StatusCode)
	}
	for _, c := range []struct {
		token  string
		params url.Values
		status int
		code   string
	}{
		{e.operator, url.Values{"from": {to.Format(time.RFC3339)}, "to": {from.Format(time.RFC3339)}}, 400, "INVALID_INPUT"},
		{e.operator, url.Values{"from": {"yesterday"}, "to": {to.Format(time.RFC3339)}}, 400, "INVALID_INPUT"},
		{e.operator, url.Values{"from": params["from"], "to": params["to"], "groupBy": {"TENANT,REGION"}}, 400, "INVALID_INPUT"},
		{u.a.member, url.Values{"from": params["from"], "to": params["to"], "tenantId": {u.b.tenant}}, 404, "NOT_FOUND"},
	} {
		resp, body := e.csvGet(c.token, c.params)
		var r response
		_ = json.Unmarshal(body, &r)
		if resp.StatusCode != c.status || r.code() != c.code {
			t.Errorf("%v: HTTP %d %s, want %d %s", c.params, resp.StatusCode, body, c.status, c.code)
		}
	}
}

func sameTime(t time.Time, s string) bool {
	u, err := time.Parse(time.RFC3339, s)
	return err == nil && u.Equal(t)
}
