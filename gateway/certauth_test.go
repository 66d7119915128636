package gateway_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

// certEnv is a gateway behind a TLS listener whose CA issues host
// certificates, with its log kept.
type certEnv struct {
	*env
	ca     *hostca.Authority
	sealer *seal.Sealer
	tlsURL string
	logs   *lockedLog
}

type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func setupCerts(t *testing.T) *certEnv {
	sealer, _ := seal.New("test")
	logs := &lockedLog{}
	var ca *hostca.Authority
	e := setup(t, func(c *gateway.Config) {
		ca = hostca.New(hostca.Config{DB: c.DB, Sealer: sealer})
		c.Authority = ca
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	srv := httptest.NewUnstartedServer(e.gw.Handler())
	srv.TLS = ca.ServerTLS([]string{"127.0.0.1"})
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &certEnv{env: e, ca: ca, sealer: sealer, tlsURL: srv.URL, logs: logs}
}

// issue issues host a certificate from ca, recorded with q, and returns it
// with its key.
func issue(t *testing.T, ca *hostca.Authority, q *sqlc.Queries, host uuid.UUID) tls.Certificate {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	csr, err := hostca.ParseCSR(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), host)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ca.Issue(context.Background(), q, host, csr)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(out.Certificate, pemKey(key))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func pemKey(key ed25519.PrivateKey) []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// specAs polls the spec over TLS with cert, naming host in the host
// header; it returns the status and body.
func (e *certEnv) specAs(cert tls.Certificate, host string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.tlsURL+hostproto.SpecPath+"?after=0&wait=0", nil)
	req.Header.Set(hostproto.Header, "3")
	req.Header.Set(hostproto.HostHeader, host)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// foreignCert is a certificate naming host, valid until notAfter, from a
// CA that is not ours.
func foreignCert(t *testing.T, host uuid.UUID, notAfter time.Time) tls.Certificate {
	t.Helper()
	caPub, caKey, _ := ed25519.GenerateKey(rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not ours"}, NotBefore: time.Now().Add(-24 * time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caPub, caKey)
	caCert, _ := x509.ParseCertificate(caDER)
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ids.Encode(ids.Host, host)}, NotBefore: notAfter.Add(-time.Hour),
		NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, caCert, pub, caKey)
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pemKey(key))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestCertificateRefusals: the gateway lets a host in by a certificate our
// CA issued it, and refuses every other with its reason: in the 401, the
// log (with host and serial) and bc_gateway_host_refused_total.
func TestCertificateRefusals(t *testing.T) {
	e := setupCerts(t)
	ctx := iam.WithPrincipal(context.Background(), control.System)
	q := sqlc.New(e.db)
	hostID := ids.Encode(ids.Host, e.host)
	valid := issue(t, e.ca, q, e.host)

	other, err := e.svc.CreateHost(ctx, e.pool, "hv-2")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := e.svc.CreateHost(ctx, e.pool, "hv-gone")
	if err != nil {
		t.Fatal(err)
	}
	goneCert := issue(t, e.ca, q, gone.Host.ID)
	e.exec("DELETE FROM hosts WHERE id = $1", gone.Host.ID)
	revoked, err := e.svc.CreateHost(ctx, e.pool, "hv-revoked")
	if err != nil {
		t.Fatal(err)
	}
	revokedCert := issue(t, e.ca, q, revoked.Host.ID)
	if _, err := e.svc.RevokeHostCertificates(ctx, revoked.Host.ID); err != nil {
		t.Fatal(err)
	}
	// Issued two minutes ago for one minute: expired, though issued while
	// the CA was.
	past := hostca.New(hostca.Config{DB: e.db, Sealer: e.sealer, Validity: time.Minute, Now: func() time.Time { return time.Now().Add(-2 * time.Minute) }})
	future := hostca.New(hostca.Config{DB: e.db, Sealer: e.sealer, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	// Signed by our CA, but never recorded: its transaction rolled back.
	var unrecorded tls.Certificate
	pgx.BeginFunc(context.Background(), e.db, func(tx pgx.Tx) error {
		unrecorded = issue(t, e.ca, sqlc.New(tx), e.host)
		return errRollback
	})

	if status, body := e.specAs(valid, hostID); status != http.StatusOK {
		t.Fatalf("a valid certificate: %d %s, want 200", status, body)
	}
	for _, tc := range []struct {
		name   string
		cert   tls.Certificate
		host   string
		reason string
	}{
		{"wrong CA", foreignCert(t, e.host, time.Now().Add(time.Hour)), hostID, "unknown_ca"},
		{"wrong CA, expired too", foreignCert(t, e.host, time.Now().Add(-time.Minute)), hostID, "unknown_ca"},
		{"expired", issue(t, past, q, e.host), hostID, "expired"},
		{"not yet valid", issue(t, future, q, e.host), hostID, "not_yet_valid"},
		{"another host's certificate", valid, ids.Encode(ids.Host, other.Host.ID), "other_host"},
		{"no host header", valid, "", "other_host"},
		{"serial never issued", unrecorded, hostID, "unknown_serial"},
		{"revoked", revokedCert, ids.Encode(ids.Host, revoked.Host.ID), "revoked"},
		{"deleted host", goneCert, ids.Encode(ids.Host, gone.Host.ID), "deleted_host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels := map[string]string{"reason": tc.reason}
			before := testenv.Metric(t, e.gw.Collectors(), "bc_gateway_host_refused_total", labels)
			status, body := e.specAs(tc.cert, tc.host)
			if status != http.StatusUnauthorized || !strings.Contains(body, tc.reason) {
				t.Fatalf("%d %s, want 401 %s", status, body, tc.reason)
			}
			if after := testenv.Metric(t, e.gw.Collectors(), "bc_gateway_host_refused_total", labels); after != before+1 {
				t.Errorf("refused %s: %v, then %v; want one more", tc.reason, before, after)
			}
			serial := hostca.SerialHex(tc.cert.Leaf)
			if !logged(e.logs.String(), `"msg":"host refused"`, `"reason":"`+tc.reason+`"`, `"serial":"`+serial+`"`) {
				t.Errorf("no log line of the refusal with its reason and serial %s:\n%s", serial, e.logs.String())
			}
		})
	}
}

// TestJoinOnlyOverTLS: the plain listener refuses join and renew, so a
// join token never travels in clear.
func TestJoinOnlyOverTLS(t *testing.T) {
	e := setupCerts(t)
	for _, path := range []string{hostproto.JoinPath, hostproto.RenewPath} {
		req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(`{"csr": ""}`))
		req.Header.Set("Authorization", "Bearer "+hostproto.JoinTokenPrefix+"x")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "FORBIDDEN") {
			t.Errorf("%s on the plain listener: %d %s, want 403 FORBIDDEN", path, resp.StatusCode, b)
		}
	}
}

type rollback struct{}

func (rollback) Error() string { return "roll back" }

var errRollback = rollback{}

func logged(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
