package hostca

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"time"
)

// serverCert is the host listener's certificate and when to make another.
type serverCert struct {
	cert    *tls.Certificate
	caID    string
	renewAt time.Time
}

// ServerTLS returns the TLS configuration of serve's host listener: its
// certificate, for names (DNS names or IP addresses), is issued by the
// oldest trusted CA and made again in the process at two thirds of its
// life, or when that CA changed. Client certificates are asked for but not
// verified here: the gateway verifies them, so that each refusal has its
// reason.
func (a *Authority) ServerTLS(names []string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequestClientCert,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return a.serverCertificate(hello.Context(), names)
		},
	}
}

func (a *Authority) serverCertificate(ctx context.Context, names []string) (*tls.Certificate, error) {
	c, err := a.current(ctx)
	if err != nil {
		return nil, err
	}
	ca := c.serverSigner()
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.server; s != nil && s.caID == ca.ID.String() && time.Now().Before(s.renewAt) {
		return s.cert, nil
	}
	cert, err := a.issueServer(ca, names)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	a.server = &serverCert{cert: cert, caID: ca.ID.String(), renewAt: now.Add(a.cfg.Validity * 2 / 3)}
	a.cfg.Logger.Info("issued the host listener's certificate", "ca", ca.ID, "names", names, "not_after", cert.Leaf.NotAfter)
	return cert, nil
}

// issueServer makes a server certificate for names under ca. Its chain
// holds ca's certificate, so that a joining host can check the pin of its
// --ca-sha256 before it sends its join token.
func (a *Authority) issueServer(ca CA, names []string) (*tls.Certificate, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate server key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: "Better Compute host gateway"},
		NotBefore:    now.Add(-Backdate),
		NotAfter:     now.Add(a.cfg.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}
