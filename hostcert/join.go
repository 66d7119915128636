package hostcert

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// requestTimeout bounds one join or renewal.
const requestTimeout = 30 * time.Second

// ErrRefused is a join or renewal the server refused (4xx): retrying the
// same request will not help.
var ErrRefused = errors.New("refused")

// Joined reports whether the identity in dir was got with token, so that a
// daemon given a new token (after a revocation) joins again.
func Joined(dir, token string) bool {
	b, err := os.ReadFile(filepath.Join(dir, joinedFile))
	return err == nil && string(b) == tokenDigest(token)
}

func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Join makes a key in dir and asks the server (https) for its certificate
// with the one-time join token. Before the token is sent, the server's
// TLS chain must hold the CA whose certificate's SHA-256 (hex) is pin and
// be valid under it for the server's name; the bundle the server answers
// must hold that CA.
func Join(ctx context.Context, server, token, pin, dir string) (*Identity, error) {
	if !strings.HasPrefix(server, "https://") {
		return nil, fmt.Errorf("join: --server %q is not an https:// URL (the TLS host listener)", server)
	}
	pin = strings.ToLower(strings.TrimSpace(pin))
	if len(pin) != sha256.Size*2 {
		return nil, errors.New("join: --ca-sha256 must be the CA certificate's SHA-256, 64 hex digits (the join command has it)")
	}
	client := &http.Client{Timeout: requestTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // checked against the pinned CA in VerifyConnection
		VerifyConnection:   func(cs tls.ConnectionState) error { return verifyPinned(cs, pin) },
	}}}
	defer client.CloseIdleConnections()
	id := &Identity{dir: dir}
	resp, key, err := request(ctx, client, server+hostproto.JoinPath, "Bearer "+token, "")
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	b, err := parseBundle([]byte(resp.CABundle))
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	if !holds(b, pin) {
		return nil, fmt.Errorf("join: the server's CA bundle does not hold the CA of --ca-sha256 %s", pin)
	}
	if err := id.save(key, []byte(resp.Certificate), []byte(resp.CABundle), resp.HostID); err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	if err := writeFile(filepath.Join(dir, joinedFile), []byte(tokenDigest(token)), 0o600); err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	return id, nil
}

// verifyPinned checks that the server's chain holds the pinned CA and that
// its certificate is valid under it for the server's name.
func verifyPinned(cs tls.ConnectionState, pin string) error {
	for _, c := range cs.PeerCertificates {
		sum := sha256.Sum256(c.Raw)
		if c.IsCA && hex.EncodeToString(sum[:]) == pin {
			roots := x509.NewCertPool()
			roots.AddCert(c)
			return verifyServer(cs, roots)
		}
	}
	return fmt.Errorf("the server's certificate chain holds no CA of --ca-sha256 %s", pin)
}

func holds(b bundle, pin string) bool {
	for _, c := range b.certs {
		sum := sha256.Sum256(c.Raw)
		if hex.EncodeToString(sum[:]) == pin {
			return true
		}
	}
	return false
}

// Renew asks the server (https) for a new certificate for a new key, over
// mutual TLS with the current one, and makes them current.
func (id *Identity) Renew(ctx context.Context, server string) error {
	client := &http.Client{Timeout: requestTimeout, Transport: &http.Transport{TLSClientConfig: id.ClientTLS()}}
	defer client.CloseIdleConnections()
	resp, key, err := request(ctx, client, server+hostproto.RenewPath, "", id.HostID())
	if err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	if resp.HostID != id.HostID() {
		return fmt.Errorf("renew: the server issued a certificate for %s, not %s", resp.HostID, id.HostID())
	}
	if err := id.save(key, []byte(resp.Certificate), []byte(resp.CABundle), resp.HostID); err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	return nil
}

// request makes a key and posts a signing request for it to url, with the
// Authorization header auth or the host header hostID; it returns the
// answer and the key.
func request(ctx context.Context, client *http.Client, url, auth, hostID string) (hostproto.JoinResponse, ed25519.PrivateKey, error) {
	var out hostproto.JoinResponse
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return out, nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return out, nil, fmt.Errorf("make signing request: %w", err)
	}
	body, _ := json.Marshal(hostproto.JoinRequest{CSR: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))})
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return out, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if hostID != "" {
		req.Header.Set(hostproto.HostHeader, hostID)
	}
	resp, err := client.Do(req)
	if err != nil {
		return out, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return out, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("server answered %s: %s", resp.Status, bytes.TrimSpace(raw))
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			err = fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return out, nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, nil, fmt.Errorf("decode answer: %w", err)
	}
	return out, key, nil
}
