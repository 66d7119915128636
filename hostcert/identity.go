// Package hostcert is the host daemon's side of host certificates: its
// Ed25519 key, the certificate the control plane issued for it, the CA
// bundle it checks the server with and its host ID, kept in the daemon's
// state dir; joining with a one-time join token, the client TLS
// configuration of mutual TLS, and renewing before the certificate
// expires. The key never leaves the host: the server sees only signing
// requests.
package hostcert

import (
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The files of an identity in the state dir.
const (
	// identityFile holds the key and its certificate, PEM, mode 0600.
	identityFile = "host-identity.pem"
	// bundleFile holds the CA bundle, PEM.
	bundleFile = "host-ca.pem"
	// hostIDFile holds the host's ID (host_…).
	hostIDFile = "host-id"
	// joinedFile holds the SHA-256 of the join token the identity was got
	// with, so that a new token (after a revocation) makes the daemon join
	// again.
	joinedFile = "host-join-token.sha256"
)

// Identity is a host's key, certificate and CA bundle. It is safe for
// concurrent use: a renewal replaces them under the connections that use
// them.
type Identity struct {
	dir string

	mu     sync.RWMutex
	cert   tls.Certificate // Leaf set
	roots  *x509.CertPool
	hostID string
	// got is when the certificate was received (the identity file's
	// modification time after a restart): renewal is due at two thirds of
	// the time from then to its expiry.
	got time.Time
	// gen counts the certificates made current, for Transport.
	gen uint64
}

func (id *Identity) generation() uint64 {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.gen
}

// Exists reports whether dir holds an identity.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, identityFile))
	return err == nil
}

// Load reads the identity in dir.
func Load(dir string) (*Identity, error) {
	raw, err := os.ReadFile(filepath.Join(dir, identityFile))
	if err != nil {
		return nil, fmt.Errorf("read host identity: %w", err)
	}
	info, err := os.Stat(filepath.Join(dir, identityFile))
	if err != nil {
		return nil, fmt.Errorf("read host identity: %w", err)
	}
	cert, err := tls.X509KeyPair(raw, raw)
	if err != nil {
		return nil, fmt.Errorf("read host identity %s: %w", filepath.Join(dir, identityFile), err)
	}
	bundle, err := os.ReadFile(filepath.Join(dir, bundleFile))
	if err != nil {
		return nil, fmt.Errorf("read CA bundle: %w", err)
	}
	roots, err := parseBundle(bundle)
	if err != nil {
		return nil, err
	}
	hostID, err := os.ReadFile(filepath.Join(dir, hostIDFile))
	if err != nil {
		return nil, fmt.Errorf("read host ID: %w", err)
	}
	return &Identity{dir: dir, cert: cert, roots: roots.pool, hostID: string(hostID), got: info.ModTime()}, nil
}

// HostID is the host's ID, the certificate's common name.
func (id *Identity) HostID() string {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.hostID
}

// NotAfter is when the current certificate expires.
func (id *Identity) NotAfter() time.Time {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.cert.Leaf.NotAfter
}

// renewAt is when the current certificate is due for renewal: at two
// thirds of its life as the host received it.
func (id *Identity) renewAt() time.Time {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.got.Add(id.cert.Leaf.NotAfter.Sub(id.got) * 2 / 3)
}

// Expired reports whether the current certificate has expired.
func (id *Identity) Expired() bool { return time.Now().After(id.NotAfter()) }

// ClientTLS is the TLS configuration of the daemon's connections to the
// gateway: it presents the current certificate and checks the server's
// against the current CA bundle, both replaced by a renewal.
func (id *Identity) ClientTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			id.mu.RLock()
			defer id.mu.RUnlock()
			c := id.cert
			return &c, nil
		},
		// The server's chain is verified in VerifyConnection, against the
		// bundle of the moment rather than one fixed here.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id.mu.RLock()
			roots := id.roots
			id.mu.RUnlock()
			return verifyServer(cs, roots)
		},
	}
}

// verifyServer checks the server's chain against roots and its name.
func verifyServer(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: cs.ServerName})
	if err != nil {
		return fmt.Errorf("the server's certificate is not of our host CA: %w", err)
	}
	return nil
}

// bundle is a parsed CA bundle.
type bundle struct {
	pool  *x509.CertPool
	certs []*x509.Certificate
}

func parseBundle(raw []byte) (bundle, error) {
	b := bundle{pool: x509.NewCertPool()}
	for rest := raw; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return bundle{}, fmt.Errorf("CA bundle: %w", err)
		}
		b.pool.AddCert(c)
		b.certs = append(b.certs, c)
	}
	if len(b.certs) == 0 {
		return bundle{}, errors.New("CA bundle: no certificate")
	}
	return b, nil
}

// save writes an identity to dir, each file replaced whole (temporary
// file, fsync, rename), the key's mode 0600, and makes it id's.
func (id *Identity) save(key ed25519.PrivateKey, certPEM, bundlePEM []byte, hostID string) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key: %w", err)
	}
	identity := append(append([]byte{}, certPEM...), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...)
	cert, err := tls.X509KeyPair(identity, identity)
	if err != nil {
		return fmt.Errorf("the issued certificate is not for our key: %w", err)
	}
	b, err := parseBundle(bundlePEM)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(id.dir, 0o700); err != nil {
		return fmt.Errorf("make state dir: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{bundleFile, bundlePEM, 0o644}, {hostIDFile, []byte(hostID), 0o644}, {identityFile, identity, 0o600}} {
		if err := writeFile(filepath.Join(id.dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	id.mu.Lock()
	id.cert, id.roots, id.hostID, id.got = cert, b.pool, hostID, time.Now()
	id.gen++
	id.mu.Unlock()
	return nil
}

// writeFile replaces path with data atomically.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
