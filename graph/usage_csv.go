package graph

import (
	"encoding/csv"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/ids"
)

// UsageCSVPath is where the handler serves the usage query as CSV, for
// billing: GET with from, to (RFC 3339), groupBy (comma-separated or
// repeated) and tenantId, as the usage query takes them, and the bearer
// token.
const UsageCSVPath = "/usage.csv"

// usageCSV answers GET /usage.csv for the authenticated principal in r's
// context: the rows usage returns, a column per key grouped by and one per
// total.
func (g *gate) usageCSV(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q, err := usageCSVQuery(r.URL.Query())
	var totals []control.UsageTotal
	if err == nil {
		totals, err = g.svc.Usage(ctx, q)
	}
	var apiErr *apierr.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Code == apierr.NotFound:
		writeError(w, http.StatusNotFound, apiErr)
		return
	case errors.As(err, &apiErr) && apiErr.Code == apierr.InvalidInput:
		writeError(w, http.StatusBadRequest, apiErr)
		return
	case err != nil:
		id := audit.RequestID(ctx)
		g.log.ErrorContext(ctx, "internal error", "request_id", id, "during", "usage.csv", "err", err)
		writeError(w, http.StatusInternalServerError, apierr.New(apierr.Internal, "internal error (request %s)", id))
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="usage.csv"`)
	cw := csv.NewWriter(w)
	var head []string
	for _, k := range control.UsageGroups {
		if slices.Contains(q.GroupBy, k) {
			head = append(head, usageColumns[k])
		}
	}
	head = append(head, "running_seconds", "paused_seconds", "stopped_seconds", "other_seconds",
		"vcpu_hours", "memory_gib_hours", "disk_gib_hours", "gpu_hours")
	cw.Write(head)
	for _, t := range totals {
		var rec []string
		for _, k := range control.UsageGroups {
			if slices.Contains(q.GroupBy, k) {
				rec = append(rec, usageKey(k, t))
			}
		}
		for _, v := range []float64{t.RunningSeconds, t.PausedSeconds, t.StoppedSeconds, t.OtherSeconds,
			t.VcpuHours, t.MemoryGiBHours, t.DiskGiBHours, t.GpuHours} {
			rec = append(rec, strconv.FormatFloat(v, 'f', -1, 64))
		}
		cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		g.log.WarnContext(ctx, "write usage.csv", "request_id", audit.RequestID(ctx), "err", err)
	}
}

// usageColumns name the CSV's key columns.
var usageColumns = map[control.UsageGroup]string{
	control.ByDay: "day", control.ByTenant: "tenant_id", control.ByPool: "pool_id",
	control.ByFlavor: "flavor_id", control.ByInstance: "instance_id",
}

// usageKey is a total's key k as the API shows it.
func usageKey(k control.UsageGroup, t control.UsageTotal) string {
	var s *string
	switch k {
	case control.ByDay:
		return t.Day.Format(time.RFC3339)
	case control.ByTenant:
		s = encodeOptID(ids.Tenant, t.TenantID)
	case control.ByPool:
		s = encodeOptID(ids.Pool, t.PoolID)
	case control.ByFlavor:
		s = encodeOptID(ids.Flavor, t.FlavorID)
	case control.ByInstance:
		s = encodeOptID(ids.Instance, t.InstanceID)
	}
	return deref(s)
}

// usageCSVQuery reads the usage query from a URL's parameters.
func usageCSVQuery(p url.Values) (control.UsageQuery, error) {
	var q control.UsageQuery
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		t, err := time.Parse(time.RFC3339Nano, p.Get(f.name))
		if err != nil {
			return q, apierr.Invalid(f.name, "an RFC 3339 time is required")
		}
		*f.to = t
	}
	var names []string
	for _, v := range p["groupBy"] {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	groups, err := control.ParseUsageGroups("groupBy", names)
	if err != nil {
		return q, err
	}
	q.GroupBy = groups
	if t := p.Get("tenantId"); t != "" {
		var d decoder
		q.TenantID = d.ptrID(ids.Tenant, "tenantId", &t)
		if d.err != nil {
			return q, d.err
		}
	}
	return q, nil
}
