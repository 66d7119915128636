package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// TestReportCertification: each report records on the instances the
// host's spec holds how the host proved itself — by a certificate,
// certified until its NotAfter; by its bearer credential, not certified —
// writing only what changed, each change a new version with its live
// UPDATED event.
func TestReportCertification(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := e.place("running")
	report := hostproto.Report{Protocol: hostproto.Version, Generation: gen,
		Instances: []hostproto.InstanceStatus{{ID: ids.Encode(ids.Instance, e.instance), State: hostproto.StateRunning}}}

	type record struct {
		certified   bool
		validBefore *time.Time
		version     int64
	}
	read := func() record {
		t.Helper()
		var r record
		if err := e.db.QueryRow(context.Background(), "SELECT host_certified, host_cert_valid_before, version FROM instances WHERE id = $1", e.instance).
			Scan(&r.certified, &r.validBefore, &r.version); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// lastEvent is the instance's newest live event in the outbox.
	lastEvent := func() events.InstanceEvent {
		t.Helper()
		var payload []byte
		if err := e.db.QueryRow(context.Background(), "SELECT payload FROM outbox WHERE key = $1 AND payload IS NOT NULL ORDER BY id DESC LIMIT 1", e.instance).Scan(&payload); err != nil {
			t.Fatal(err)
		}
		var ev events.InstanceEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	withCertificate := func(notAfter time.Time) {
		t.Helper()
		body, _ := json.Marshal(report)
		req := httptest.NewRequest("POST", hostproto.ReportPath, strings.NewReader(string(body)))
		req.Header.Set(hostproto.Header, strconv.Itoa(hostproto.Version))
		req.Header.Set("Authorization", "Bearer "+e.credential)
		rec := httptest.NewRecorder()
		gateway.ServeReportWithCertificate(e.gw, rec, req, hostproto.Version, notAfter)
		if rec.Code != 204 {
			t.Fatalf("report with a certificate: %d %s", rec.Code, rec.Body)
		}
	}
	withBearer := func() {
		t.Helper()
		resp := e.request("POST", hostproto.ReportPath, e.credential, report)
		if resp.StatusCode != 204 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("report with the bearer credential: %d %s", resp.StatusCode, b)
		}
	}
	same := func(a, b *time.Time) bool { return a != nil && b != nil && a.Equal(*b) }

	first := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	t.Run("a certificate makes its instances certified until it expires", func(t *testing.T) {
		before := read()
		withCertificate(first)
		got := read()
		if !got.certified || !same(got.validBefore, &first) || got.version != before.version+1 {
			t.Fatalf("after a report by certificate: %+v, want certified until %v at version %d", got, first, before.version+1)
		}
		if ev := lastEvent(); ev.Type != events.Updated || ev.Version != got.version || !ev.Instance.HostCertified || !same(ev.Instance.HostCertValidBefore, &first) {
			t.Fatalf("event = %+v, want UPDATED at version %d, certified until %v", ev, got.version, first)
		}
	})
	t.Run("the same certificate again writes nothing", func(t *testing.T) {
		before := read()
		withCertificate(first)
		if got := read(); got.version != before.version {
			t.Fatalf("version %d → %d on an unchanged certification", before.version, got.version)
		}
	})
	t.Run("a renewed certificate moves the validity", func(t *testing.T) {
		renewed := first.Add(7 * 24 * time.Hour)
		withCertificate(renewed)
		got := read()
		if !got.certified || !same(got.validBefore, &renewed) {
			t.Fatalf("after a renewal: %+v, want certified until %v", got, renewed)
		}
		if ev := lastEvent(); ev.Version != got.version || !same(ev.Instance.HostCertValidBefore, &renewed) {
			t.Fatalf("event = %+v, want the renewed validity", ev)
		}
	})
	t.Run("the bearer credential makes them not certified", func(t *testing.T) {
		before := read()
		withBearer()
		got := read()
		if got.certified || got.validBefore != nil || got.version != before.version+1 {
			t.Fatalf("after a report by bearer credential: %+v, want not certified at version %d", got, before.version+1)
		}
		if ev := lastEvent(); ev.Version != got.version || ev.Instance.HostCertified || ev.Instance.HostCertValidBefore != nil {
			t.Fatalf("event = %+v, want not certified", ev)
		}
		withBearer()
		if again := read(); again.version != got.version {
			t.Fatalf("a second bearer report wrote again: version %d → %d", got.version, again.version)
		}
	})
	t.Run("an expired certificate does not certify", func(t *testing.T) {
		withCertificate(first)
		if got := read(); !got.certified {
			t.Fatalf("not certified again by a valid certificate: %+v", got)
		}
		withCertificate(time.Now().Add(-time.Minute))
		if got := read(); got.certified || got.validBefore != nil {
			t.Fatalf("after a report by an expired certificate: %+v", got)
		}
	})
}
