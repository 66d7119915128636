package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/internal/testenv"
)

// The host certificate tests, through the real processes. Each was seen to
// fail with the code broken: the gateway ignoring client certificates
// (TestHostJoinsByCertificate), a join token not spent by its join and the
// revocation check dropped (TestHostJoinRefusals), the daemon not renewing
// or reusing connections made under its old certificate (TestHostRenews).

// TestHostJoinsByCertificate: a host given only a join token joins over
// the TLS host listener, gets its certificate and serves an instance by
// certificate alone; it has no bearer credential.
func TestHostJoinsByCertificate(t *testing.T) {
	t.Parallel()
	c := start(t, options{certified: true, hosts: 1, reconcilers: 1, hostVcpus: 4})
	c.create("vm", "RUNNING")
	c.settle(60 * time.Second)
	if n := c.count("hosts WHERE credential_hash IS NULL AND cert_not_after > now()"); n != 1 {
		t.Fatalf("%d hosts without a bearer credential and with a live certificate, want 1", n)
	}
	if n := c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE i.state = 'RUNNING' AND h.name = 'hv-0'"); n != 1 {
		t.Fatalf("%d instances RUNNING on hv-0, want 1", n)
	}
	data, _ := c.gql(c.operator, `{ hosts { name certified certValidBefore } }`, nil)
	h := data["hosts"].([]any)[0].(map[string]any)
	if h["certified"] != true || h["certValidBefore"] == nil {
		t.Fatalf("hv-0 as the API shows it: %v", h)
	}
}

// TestHostJoinRefusals: a join token works once and only within its
// lifetime; a signing request naming another host is a coded 400 that
// leaves the token unspent; a revoked host is refused at once, with its
// reason in serve's log and metric, and joins again with a new token.
func TestHostJoinRefusals(t *testing.T) {
	t.Parallel()
	c := start(t, options{certified: true, hosts: 1, reconcilers: 1, hostVcpus: 4})
	c.create("vm", "RUNNING")
	c.settle(60 * time.Second)
	hv0 := c.joins["hv-0"]

	t.Run("a join token is single use", func(t *testing.T) {
		status, body := c.joinRequest(hv0.token, csrFor(t, ""))
		if status != http.StatusUnauthorized || !strings.Contains(body, "join_token") {
			t.Fatalf("second join: %d %s, want 401 join_token", status, body)
		}
	})
	other := c.adoptCertified("hv-other", 4)
	t.Run("a CSR for another host's ID is a coded 400 and spends nothing", func(t *testing.T) {
		status, body := c.joinRequest(other.token, csrFor(t, hv0.host))
		var e hostproto.Error
		json.Unmarshal([]byte(body), &e)
		if status != http.StatusBadRequest || e.Code != "INVALID_INPUT" || e.Field != "csr" {
			t.Fatalf("join with hv-0's ID: %d %s, want 400 INVALID_INPUT csr", status, body)
		}
		if n := c.count("host_certificates WHERE host_id = (SELECT id FROM hosts WHERE name = 'hv-other')"); n != 0 {
			t.Fatalf("%d certificates of hv-other after a refused join", n)
		}
		if status, body := c.joinRequest(other.token, csrFor(t, "")); status != http.StatusOK {
			t.Fatalf("join with the unspent token: %d %s", status, body)
		}
	})
	t.Run("a join token past its lifetime is refused", func(t *testing.T) {
		again := c.must(c.operator, `mutation($h: ID!) { createHostJoinToken(input: {hostId: $h}) { joinToken } }`,
			map[string]any{"h": other.host}, "createHostJoinToken", "joinToken")
		if _, err := c.db.Exec(context.Background(), "UPDATE host_join_tokens SET expires_at = now() - interval '1 second' WHERE used_at IS NULL"); err != nil {
			t.Fatal(err)
		}
		if status, body := c.joinRequest(again, csrFor(t, "")); status != http.StatusUnauthorized || !strings.Contains(body, "join_token") {
			t.Fatalf("expired token: %d %s, want 401 join_token", status, body)
		}
	})
	t.Run("a revoked host is refused at once and joins again with a new token", func(t *testing.T) {
		before := metric(t, c.url, `bc_gateway_host_refused_total{reason="revoked"}`)
		c.must(c.operator, `mutation($h: ID!) { revokeHostCertificates(input: {hostId: $h}) { host { id } } }`, map[string]any{"h": hv0.host})
		testenv.Eventually(t, 20*time.Second, "serve to log hv-0 refused as revoked", func() bool {
			return logHas(c.server, `"msg":"host refused"`, `"reason":"revoked"`, hv0.host)
		})
		if after := metric(t, c.url, `bc_gateway_host_refused_total{reason="revoked"}`); after <= before {
			t.Fatalf("refused revoked: %v before, %v after", before, after)
		}
		data, _ := c.gql(c.operator, `{ hosts { name certified certValidBefore } }`, nil)
		for _, h := range data["hosts"].([]any) {
			if h := h.(map[string]any); h["name"] == "hv-0" && (h["certified"] != false || h["certValidBefore"] != nil) {
				t.Fatalf("revoked hv-0 as the API shows it: %v", h)
			}
		}
		token := c.must(c.operator, `mutation($h: ID!) { createHostJoinToken(input: {hostId: $h}) { joinToken } }`,
			map[string]any{"h": hv0.host}, "createHostJoinToken", "joinToken")
		c.hosts[0].stop()
		c.startJoined("host-0-again", c.hostURLs[0], join{host: hv0.host, token: token, pin: hv0.pin}, c.hostDirs["hv-0"])
		testenv.Eventually(t, 30*time.Second, "hv-0 to join again and report", func() bool {
			return c.count("hosts WHERE name = 'hv-0' AND cert_not_after > now() AND last_seen_at > now() - interval '2 seconds'") == 1
		})
		c.settle(30 * time.Second)
	})
	t.Run("no join token in the audit log or any process's log", func(t *testing.T) {
		if n := c.count("audit_events WHERE details::text LIKE '%bcj_%'"); n != 0 {
			t.Fatalf("%d audit events hold a join token", n)
		}
		for _, p := range c.procs {
			if b, _ := os.ReadFile(p.log); bytes.Contains(b, []byte(hostproto.JoinTokenPrefix)) {
				t.Fatalf("%s's log holds a join token", p.name)
			}
		}
	})
}

// TestHostRenews: with 12 s certificates a host renews its own at two
// thirds of their life, over and over, while its instance keeps running;
// it still reports after its first certificate expired.
func TestHostRenews(t *testing.T) {
	t.Parallel()
	c := start(t, options{certified: true, hosts: 1, reconcilers: 1, hostVcpus: 4, serverEnv: []string{"BC_HOST_CERT_VALIDITY=12s"}})
	c.create("vm", "RUNNING")
	c.settle(60 * time.Second)
	var first time.Time
	if err := c.db.QueryRow(context.Background(), "SELECT cert_not_after FROM hosts WHERE name = 'hv-0'").Scan(&first); err != nil {
		t.Fatal(err)
	}
	running := func() {
		if n := c.count("instances WHERE state <> 'RUNNING'"); n != 0 {
			t.Fatalf("%d instances not RUNNING during renewals", n)
		}
	}
	testenv.Eventually(t, 30*time.Second, "hv-0's cert_not_after to advance", func() bool {
		running()
		return c.count("hosts WHERE name = 'hv-0' AND cert_not_after > $1", first) == 1
	})
	testenv.Eventually(t, 30*time.Second, "hv-0 to report after its first certificate expired, renewed again", func() bool {
		running()
		return c.count("hosts WHERE name = 'hv-0' AND last_seen_at > $1::timestamptz + interval '1 second'", first) == 1 &&
			c.count("host_certificates WHERE host_id = (SELECT id FROM hosts WHERE name = 'hv-0')") >= 3
	})
	if logHas(c.server, `"msg":"host refused"`) {
		t.Fatalf("serve refused the renewing host:\n%s", c.server.tail())
	}
}

// joinRequest posts a join to the first serve's host listener, as a daemon
// would (its CA not checked here), and returns the status and body.
func (c *cluster) joinRequest(token string, csr []byte) (int, string) {
	c.t.Helper()
	body, _ := json.Marshal(hostproto.JoinRequest{CSR: string(csr)})
	req, _ := http.NewRequest("POST", c.hostURLs[0]+hostproto.JoinPath, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// csrFor makes a signing request of a new key naming cn (empty: no one).
func csrFor(t testing.TB, cn string) []byte {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// logHas reports whether one line of p's log holds every one of parts.
func logHas(p *proc, parts ...string) bool {
	b, _ := os.ReadFile(p.log)
	for _, line := range strings.Split(string(b), "\n") {
		all := true
		for _, part := range parts {
			all = all && strings.Contains(line, part)
		}
		if all {
			return true
		}
	}
	return false
}
