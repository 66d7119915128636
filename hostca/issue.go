package hostca

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// MaxCSR bounds a signing request's PEM.
const MaxCSR = 16 << 10

// Issued is a certificate issued to a host.
type Issued struct {
	// Certificate is the host's certificate, PEM-encoded.
	Certificate []byte
	// Bundle is every trusted CA's certificate, PEM-encoded.
	Bundle []byte
	// Serial is the certificate's serial, as host_certificates keys it.
	Serial string
	// NotAfter is when it expires.
	NotAfter time.Time
}

// HostName is the subject common name of a host's certificate: its API ID.
func HostName(hostID uuid.UUID) string { return ids.Encode(ids.Host, hostID) }

// ParseCSR reads a host's certificate signing request (PEM) and checks it
// for the host hostID: signed by its Ed25519 key, naming that host or no
// one. A bad request is an INVALID_INPUT error of field csr.
func ParseCSR(pemBytes []byte, hostID uuid.UUID) (*x509.CertificateRequest, error) {
	if len(pemBytes) > MaxCSR {
		return nil, apierr.Invalid("csr", "is over %d bytes", MaxCSR)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, apierr.Invalid("csr", "must be a PEM CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, apierr.Invalid("csr", "cannot be parsed: %v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, apierr.Invalid("csr", "bad signature: %v", err)
	}
	if _, ok := csr.PublicKey.(ed25519.PublicKey); !ok {
		return nil, apierr.Invalid("csr", "must be for an Ed25519 key")
	}
	if cn := csr.Subject.CommonName; cn != "" && cn != HostName(hostID) {
		return nil, apierr.Invalid("csr", "names %q, but this is host %s", cn, HostName(hostID))
	}
	return csr, nil
}

// Issue signs a certificate for host hostID with csr's key (checked by
// ParseCSR) under the newest CA, and records it with q, which runs in the
// caller's transaction: host_certificates and the host's cert_not_after.
func (a *Authority) Issue(ctx context.Context, q *sqlc.Queries, hostID uuid.UUID, csr *x509.CertificateRequest) (Issued, error) {
	c, err := a.current(ctx)
	if err != nil {
		return Issued{}, err
	}
	ca := c.signer()
	now := a.cfg.Now()
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: HostName(hostID)},
		NotBefore:    now.Add(-Backdate),
		NotAfter:     now.Add(a.cfg.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.key)
	if err != nil {
		return Issued{}, fmt.Errorf("sign host certificate: %w", err)
	}
	// Recorded as the certificate says, to the second, as the gateway
	// reads it.
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Issued{}, fmt.Errorf("read host certificate: %w", err)
	}
	serial := SerialHex(cert)
	if err := q.InsertHostCertificate(ctx, sqlc.InsertHostCertificateParams{
		Serial: serial, HostID: hostID, CaID: ca.ID, NotBefore: cert.NotBefore, NotAfter: cert.NotAfter,
	}); err != nil {
		return Issued{}, fmt.Errorf("record host certificate: %w", err)
	}
	if _, err := q.RefreshHostCertNotAfter(ctx, hostID); err != nil {
		return Issued{}, fmt.Errorf("record host certificate expiry: %w", err)
	}
	return Issued{
		Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Bundle:      c.bundle(),
		Serial:      serial,
		NotAfter:    cert.NotAfter,
	}, nil
}
