// Package hostca is the control plane's certificate authority for hosts: an
// Ed25519 CA made on first need and kept in host_cas with its key sealed,
// which issues each host a certificate naming its ID from a signing request
// the host made (the host's key never leaves it), and the TLS certificate
// of serve's host listener.
//
// Every CA not retired is trusted. The newest signs host certificates; the
// oldest signs the server's own certificate, so that every host still in
// service (whose bundle holds at least the oldest) trusts the server during
// a rotation. Rotate adds a CA; Retire ends the trust in one.
package hostca

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

// Config configures an Authority.
type Config struct {
	// DB holds the CAs and the certificates issued. Required.
	DB *pgxpool.Pool
	// Sealer seals each CA's private key at rest. Required.
	Sealer *seal.Sealer
	// Validity is how long a host certificate (and the server's) is valid.
	// Default DefaultValidity.
	Validity time.Duration
	// Refresh is how long the CAs read from the database are used before
	// they are read again, so that a rotation or retirement made by another
	// process takes effect. Default DefaultRefresh.
	Refresh time.Duration
	// Now is the time certificates are issued at. Default time.Now; tests
	// issue certificates already expired.
	Now func() time.Time
	// Logger logs. Default slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	// DefaultValidity is how long a host certificate is valid: 30 days.
	DefaultValidity = 720 * time.Hour
	// DefaultRefresh is how long the CAs read are used before reading again.
	DefaultRefresh = 10 * time.Second
	// CAValidity is how long a CA certificate is valid: ten years.
	CAValidity = 10 * 365 * 24 * time.Hour
	// Backdate is how long before its issue a certificate starts to be
	// valid, for clocks that run a little behind.
	Backdate = 5 * time.Minute
)

func (c *Config) applyDefaults() {
	if c.Validity <= 0 {
		c.Validity = DefaultValidity
	}
	if c.Refresh <= 0 {
		c.Refresh = DefaultRefresh
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Authority issues and checks host certificates. It is safe for
// concurrent use.
type Authority struct {
	cfg Config
	q   *sqlc.Queries

	mu     sync.Mutex
	cas    *cas // nil until first read
	readAt time.Time
	server *serverCert
}

// New returns an Authority. Nothing is read or made until first need.
func New(cfg Config) *Authority {
	cfg.applyDefaults()
	return &Authority{cfg: cfg, q: sqlc.New(cfg.DB)}
}

// Validity is how long the certificates the Authority issues are valid.
func (a *Authority) Validity() time.Duration { return a.cfg.Validity }

// CA is one certificate authority, with its key opened.
type CA struct {
	ID   uuid.UUID
	Cert *x509.Certificate
	key  crypto.Signer
	// CreatedAt is when it was made.
	CreatedAt time.Time
	// RetiredAt is when it stopped being trusted; nil while it is.
	RetiredAt *time.Time
}

// Fingerprint is the SHA-256 of the CA certificate's DER, in hex: what a
// host daemon pins with --ca-sha256.
func (c CA) Fingerprint() string { return Fingerprint(c.Cert) }

// Fingerprint is the SHA-256 of a certificate's DER, in hex.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// cas are the CAs not retired, oldest first; never empty.
type cas struct {
	all  []CA
	pool *x509.CertPool
}

// signer is the newest CA: it signs host certificates.
func (c *cas) signer() CA { return c.all[len(c.all)-1] }

// serverSigner is the oldest CA: it signs the server's certificate.
func (c *cas) serverSigner() CA { return c.all[0] }

// bundle is every trusted CA's certificate, PEM-encoded.
func (c *cas) bundle() []byte {
	var out []byte
	for _, ca := range c.all {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})...)
	}
	return out
}

// current returns the trusted CAs, read again when older than Refresh, and
// made when there is none.
func (a *Authority) current(ctx context.Context) (*cas, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cas != nil && time.Since(a.readAt) < a.cfg.Refresh {
		return a.cas, nil
	}
	c, err := a.load(ctx)
	if err != nil {
		return nil, err
	}
	a.cas, a.readAt = c, time.Now()
	return c, nil
}

// forget makes the next use read the CAs again.
func (a *Authority) forget() {
	a.mu.Lock()
	a.cas = nil
	a.mu.Unlock()
}

// load reads the CAs not retired, making the first when there is none.
func (a *Authority) load(ctx context.Context) (*cas, error) {
	rows, err := a.q.LiveHostCAs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read host CAs: %w", err)
	}
	if len(rows) == 0 {
		err := pgx.BeginFunc(ctx, a.cfg.DB, func(tx pgx.Tx) error {
			q := sqlc.New(tx)
			if err := q.LockHostCAs(ctx); err != nil {
				return err
			}
			if rows, err = q.LiveHostCAs(ctx); err != nil || len(rows) > 0 {
				return err
			}
			row, err := a.create(ctx, q)
			rows = append(rows, row)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("make the first host CA: %w", err)
		}
	}
	c := &cas{pool: x509.NewCertPool()}
	for _, r := range rows {
		ca, err := a.open(r)
		if err != nil {
			return nil, err
		}
		c.all = append(c.all, ca)
		c.pool.AddCert(ca.Cert)
	}
	return c, nil
}

// open parses a CA row and opens its key.
func (a *Authority) open(r sqlc.HostCa) (CA, error) {
	block, _ := pem.Decode([]byte(r.CertPem))
	if block == nil {
		return CA{}, fmt.Errorf("host CA %s: no PEM certificate", r.ID)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return CA{}, fmt.Errorf("host CA %s: %w", r.ID, err)
	}
	seed, err := a.cfg.Sealer.Open(r.KeySealed, r.ID[:])
	if err != nil {
		return CA{}, fmt.Errorf("host CA %s: open key: %w", r.ID, err)
	}
	if len(seed) != ed25519.SeedSize {
		return CA{}, fmt.Errorf("host CA %s: key is %d bytes, not an Ed25519 seed", r.ID, len(seed))
	}
	return CA{ID: r.ID, Cert: cert, key: ed25519.NewKeyFromSeed(seed), CreatedAt: r.CreatedAt, RetiredAt: r.RetiredAt}, nil
}

// create makes a CA and stores it with q.
func (a *Authority) create(ctx context.Context, q *sqlc.Queries) (sqlc.HostCa, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return sqlc.HostCa{}, fmt.Errorf("generate CA key: %w", err)
	}
	id := ids.New()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "Better Compute host CA " + now.UTC().Format("2006-01-02 15:04:05"), Organization: []string{"Better Compute"}},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(CAValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return sqlc.HostCa{}, fmt.Errorf("sign CA certificate: %w", err)
	}
	row, err := q.InsertHostCA(ctx, sqlc.InsertHostCAParams{
		ID:        id,
		CertPem:   string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeySealed: a.cfg.Sealer.Seal(key.Seed(), id[:]),
		NotAfter:  tmpl.NotAfter,
	})
	if err != nil {
		return sqlc.HostCa{}, fmt.Errorf("store CA: %w", err)
	}
	a.cfg.Logger.InfoContext(ctx, "made a host CA", "ca", id, "sha256", Fingerprint(mustParse(der)))
	return row, nil
}

func mustParse(der []byte) *x509.Certificate {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return c
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() *big.Int {
	b := make([]byte, 16)
	rand.Read(b)
	b[0] &= 0x7f
	return new(big.Int).SetBytes(b)
}

// SerialHex is how host_certificates keys a certificate: its serial in
// lowercase hex.
func SerialHex(cert *x509.Certificate) string { return cert.SerialNumber.Text(16) }

// Trust returns the pool of every CA not retired, for checking a host's
// certificate, and the PEM bundle of them, for a host to check the server.
func (a *Authority) Trust(ctx context.Context) (*x509.CertPool, []byte, error) {
	c, err := a.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.pool, c.bundle(), nil
}

// Refresh reads the CAs again now, as after a rotation elsewhere.
func (a *Authority) Refresh(ctx context.Context) error {
	a.forget()
	_, err := a.current(ctx)
	return err
}

// ServerFingerprint is the SHA-256 of the CA that signs the server's
// certificate, in hex: what a joining host pins (--ca-sha256). It makes
// the first CA when there is none.
func (a *Authority) ServerFingerprint(ctx context.Context) (string, error) {
	c, err := a.current(ctx)
	if err != nil {
		return "", err
	}
	return c.serverSigner().Fingerprint(), nil
}

// List returns every CA, retired ones too, oldest first. It makes the
// first when there is none.
func (a *Authority) List(ctx context.Context) ([]CA, error) {
	if _, err := a.current(ctx); err != nil {
		return nil, err
	}
	rows, err := a.cfg.DB.Query(ctx, "SELECT id, cert_pem, key_sealed, not_after, created_at, retired_at FROM host_cas ORDER BY created_at, id")
	if err != nil {
		return nil, fmt.Errorf("list host CAs: %w", err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[sqlc.HostCa])
	if err != nil {
		return nil, fmt.Errorf("list host CAs: %w", err)
	}
	out := make([]CA, 0, len(all))
	for _, r := range all {
		ca, err := a.open(r)
		if err != nil {
			return nil, err
		}
		out = append(out, ca)
	}
	return out, nil
}

// Rotate makes a new CA, which signs host certificates from now on. The
// older ones stay trusted until retired: hosts move over as they renew.
func (a *Authority) Rotate(ctx context.Context) (CA, error) {
	var row sqlc.HostCa
	err := pgx.BeginFunc(ctx, a.cfg.DB, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		if err := q.LockHostCAs(ctx); err != nil {
			return err
		}
		var err error
		if row, err = a.create(ctx, q); err != nil {
			return err
		}
		return audit.Write(ctx, q, audit.Event{Action: "hostCA.rotate", TargetType: "hostCA", TargetID: row.ID, RequestID: audit.RequestID(ctx)})
	})
	if err != nil {
		return CA{}, fmt.Errorf("rotate host CA: %w", err)
	}
	a.forget()
	return a.open(row)
}

// ErrLastCA is Retire's refusal to retire the only CA trusted.
var ErrLastCA = errors.New("it is the only host CA trusted: rotate first")

// Retire ends the trust in a CA: every certificate it signed is refused
// from then on. The last CA trusted cannot be retired.
func (a *Authority) Retire(ctx context.Context, id uuid.UUID) error {
	err := pgx.BeginFunc(ctx, a.cfg.DB, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		if err := q.LockHostCAs(ctx); err != nil {
			return err
		}
		live, err := q.LiveHostCAs(ctx)
		if err != nil {
			return err
		}
		if len(live) == 1 && live[0].ID == id {
			return ErrLastCA
		}
		if _, err := q.RetireHostCA(ctx, id); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("no host CA %s that is trusted", id)
			}
			return err
		}
		return audit.Write(ctx, q, audit.Event{Action: "hostCA.retire", TargetType: "hostCA", TargetID: id, RequestID: audit.RequestID(ctx)})
	})
	if err != nil {
		return fmt.Errorf("retire host CA: %w", err)
	}
	a.forget()
	return nil
}
