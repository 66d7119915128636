package gateway_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// TestReportCertification: each report records on the instances the
// host's spec holds how the host proved itself — by its certificate over
// mutual TLS, certified until the certificate's NotAfter; by its bearer
// credential, not certified — writing only what changed, each change a
// new version with its live UPDATED event.
func TestReportCertification(t *testing.T) {
	t.Parallel()
	e := setupCerts(t)
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
	// withCertificate posts the report over mutual TLS with cert, as the
	// host daemon does once it joined, and returns the certificate's NotAfter.
	withCertificate := func(cert tls.Certificate) time.Time {
		t.Helper()
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(report)
		req, _ := http.NewRequest("POST", e.tlsURL+hostproto.ReportPath, bytes.NewReader(body))
		req.Header.Set(hostproto.Header, strconv.Itoa(hostproto.Version))
		req.Header.Set(hostproto.HostHeader, ids.Encode(ids.Host, e.host))
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
		defer client.CloseIdleConnections()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 204 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("report by certificate: %d %s", resp.StatusCode, b)
		}
		return leaf.NotAfter
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

	cert := issue(t, e.ca, sqlc.New(e.db), e.host)
	var first time.Time
	t.Run("a certificate makes its instances certified until it expires", func(t *testing.T) {
		before := read()
		first = withCertificate(cert)
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
		withCertificate(cert)
		if got := read(); got.version != before.version {
			t.Fatalf("version %d → %d on an unchanged certification", before.version, got.version)
		}
	})
	t.Run("a renewed certificate moves the validity", func(t *testing.T) {
		// The same CA, issuing for longer, as a renewal under a longer
		// BC_HOST_CERT_VALIDITY would.
		longer := hostca.New(hostca.Config{DB: e.db, Sealer: e.sealer, Validity: 40 * 24 * time.Hour})
		renewed := withCertificate(issue(t, longer, sqlc.New(e.db), e.host))
		if !renewed.After(first) {
			t.Fatalf("the renewal expires at %v, not after %v", renewed, first)
		}
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
}

// TestPartialReportCertification: a partial report (version 5) records
// how the host proved itself only when that changed since the last report
// recorded it; a whole report always does.
func TestPartialReportCertification(t *testing.T) {
	t.Parallel()
	e := setupCerts(t)
	gen := e.place("running")
	certified := func() bool {
		t.Helper()
		var c bool
		if err := e.db.QueryRow(context.Background(), "SELECT host_certified FROM instances WHERE id = $1", e.instance).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	cert := issue(t, e.ca, sqlc.New(e.db), e.host)
	post := func(partial bool, cert *tls.Certificate) {
		t.Helper()
		body, _ := json.Marshal(hostproto.Report{Protocol: hostproto.Version, Generation: gen, Partial: partial})
		req, _ := http.NewRequest("POST", e.tlsURL+hostproto.ReportPath, bytes.NewReader(body))
		req.Header.Set(hostproto.Header, strconv.Itoa(hostproto.Version))
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		if cert != nil {
			req.Header.Set(hostproto.HostHeader, ids.Encode(ids.Host, e.host))
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		} else {
			req.Header.Set("Authorization", "Bearer "+e.credential)
		}
		client := &http.Client{Transport: tr}
		defer client.CloseIdleConnections()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 204 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("report: %d %s", resp.StatusCode, b)
		}
	}
	post(false, &cert)
	if !certified() {
		t.Fatal("not certified after a whole report by certificate")
	}
	post(true, nil)
	if certified() {
		t.Fatal("still certified after a partial report by the bearer credential: a changed proof must be recorded")
	}
	// Its proof unchanged, a partial report looks at no instance: a record
	// made behind its back stays until a whole report.
	e.exec("UPDATE instances SET host_certified = true, host_cert_valid_before = now() + interval '1 day' WHERE id = $1", e.instance)
	post(true, nil)
	if !certified() {
		t.Fatal("a partial report with an unchanged proof looked at the instances")
	}
	post(false, nil)
	if certified() {
		t.Fatal("a whole report did not record the bearer credential's proof")
	}
}
