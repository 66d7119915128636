package hostca_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

func csr(t *testing.T, cn string) []byte {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestAuthority: the first CA is made once however many processes ask at
// once, its key sealed; a rotation makes a new CA that signs host
// certificates while the oldest keeps signing the server's and both stay
// trusted; retiring ends the trust in one, never the last.
func TestAuthority(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	sealer, _ := seal.New("test")
	var wg sync.WaitGroup
	cas := make([]*hostca.Authority, 4)
	pins := make([]string, len(cas))
	for i := range cas {
		cas[i] = hostca.New(hostca.Config{DB: db, Sealer: sealer, Logger: slog.New(slog.DiscardHandler)})
		wg.Go(func() {
			p, err := cas[i].ServerFingerprint(ctx)
			if err != nil {
				t.Error(err)
			}
			pins[i] = p
		})
	}
	wg.Wait()
	var n int
	var sealed []byte
	db.QueryRow(ctx, "SELECT count(*) FROM host_cas").Scan(&n)
	db.QueryRow(ctx, "SELECT key_sealed FROM host_cas LIMIT 1").Scan(&sealed)
	if n != 1 {
		t.Fatalf("%d CAs made by 4 concurrent first uses, want 1", n)
	}
	for _, p := range pins[1:] {
		if p != pins[0] {
			t.Fatalf("pins differ: %v", pins)
		}
	}
	if len(sealed) <= ed25519.SeedSize {
		t.Fatalf("CA key stored as %d bytes: not sealed", len(sealed))
	}
	other, _ := seal.New("another secret")
	if _, err := hostca.New(hostca.Config{DB: db, Sealer: other}).ServerFingerprint(ctx); err == nil {
		t.Fatal("a CA key opened under another secret")
	}

	a := cas[0]
	host := ids.New()
	if _, err := db.Exec(ctx, "INSERT INTO pools (id, name, class, runtime) VALUES ($1, 'p', 'vps-host', 'fake')", host); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "INSERT INTO hosts (id, pool_id, name) VALUES ($1, $1, 'hv')", host); err != nil {
		t.Fatal(err)
	}
	issue := func() *x509.Certificate {
		t.Helper()
		req, err := hostca.ParseCSR(csr(t, ""), host)
		if err != nil {
			t.Fatal(err)
		}
		out, err := a.Issue(ctx, sqlc.New(db), host, req)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(out.Certificate)
		c, _ := x509.ParseCertificate(block.Bytes)
		return c
	}
	verifies := func(c *x509.Certificate) bool {
		pool, _, err := a.Trust(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil
	}
	serverIssuer := func() string {
		cfg := a.ServerTLS([]string{"127.0.0.1"})
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Issuer.CommonName
	}

	t.Run("a host certificate names the host and is recorded", func(t *testing.T) {
		c := issue()
		if c.Subject.CommonName != ids.Encode(ids.Host, host) || !verifies(c) {
			t.Fatalf("certificate of %q, verifies %v", c.Subject.CommonName, verifies(c))
		}
		var after bool
		db.QueryRow(ctx, "SELECT cert_not_after = $2 FROM hosts WHERE id = $1", host, c.NotAfter).Scan(&after)
		var recorded int
		db.QueryRow(ctx, "SELECT count(*) FROM host_certificates WHERE serial = $1 AND host_id = $2", hostca.SerialHex(c), host).Scan(&recorded)
		if !after || recorded != 1 {
			t.Fatal("certificate not recorded, or cert_not_after not its expiry")
		}
	})
	t.Run("a CSR naming another host is INVALID_INPUT csr", func(t *testing.T) {
		_, err := hostca.ParseCSR(csr(t, ids.Encode(ids.Host, uuid.New())), host)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Code != apierr.InvalidInput || e.Field != "csr" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("rotate, then retire", func(t *testing.T) {
		old := issue()
		oldServer := serverIssuer()
		made, err := a.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fresh := issue()
		if fresh.Issuer.CommonName != made.Cert.Subject.CommonName || !verifies(old) || !verifies(fresh) {
			t.Fatalf("after a rotation: new certificate by %q (want %q), old verifies %v, new %v",
				fresh.Issuer.CommonName, made.Cert.Subject.CommonName, verifies(old), verifies(fresh))
		}
		if got := serverIssuer(); got != oldServer {
			t.Fatalf("server certificate by %q after a rotation, want the oldest CA %q", got, oldServer)
		}
		all, _ := a.List(ctx)
		if err := a.Retire(ctx, all[0].ID); err != nil {
			t.Fatal(err)
		}
		if verifies(old) || !verifies(fresh) {
			t.Fatalf("after retiring the old CA: old verifies %v, new %v", verifies(old), verifies(fresh))
		}
		if got := serverIssuer(); got != made.Cert.Subject.CommonName {
			t.Fatalf("server certificate by %q after the retirement, want %q", got, made.Cert.Subject.CommonName)
		}
		if err := a.Retire(ctx, made.ID); !errors.Is(err, hostca.ErrLastCA) {
			t.Fatalf("retiring the last CA: %v", err)
		}
	})
}
