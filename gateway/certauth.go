package gateway

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// Why the gateway refused a host: the reason label of
// bc_gateway_host_refused_total, and the start of the 401's body.
const (
	refusedUnknownCredential = "unknown_credential"
	refusedUnknownCA         = "unknown_ca"
	refusedExpired           = "expired"
	refusedNotYetValid       = "not_yet_valid"
	refusedUnknownSerial     = "unknown_serial"
	refusedRevoked           = "revoked"
	refusedDeletedHost       = "deleted_host"
	refusedOtherHost         = "other_host"
	refusedJoinToken         = "join_token"
)

// refusedReasons are every reason, so the counter shows each from zero.
var refusedReasons = []string{
	refusedUnknownCredential, refusedUnknownCA, refusedExpired, refusedNotYetValid,
	refusedUnknownSerial, refusedRevoked, refusedDeletedHost, refusedOtherHost, refusedJoinToken,
}

func newRefusedCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bc_gateway_host_refused_total",
		Help: "Host requests the gateway refused (401), by reason: unknown_credential, unknown_ca, expired, not_yet_valid, unknown_serial, revoked, deleted_host, other_host, join_token.",
	}, []string{"reason"})
	for _, r := range refusedReasons {
		c.WithLabelValues(r)
	}
	return c
}

// refusal is why a host was not let in.
type refusal struct {
	reason string
	// host is the host the request named (its header or certificate);
	// serial the certificate's, when it presented one.
	host, serial string
	detail       string
}

func (f *refusal) Error() string { return f.reason + ": " + f.detail }

// refuse answers 401 with the reason, logs it and counts it.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, f *refusal) {
	g.refusedTotal.WithLabelValues(f.reason).Inc()
	g.log.WarnContext(r.Context(), "host refused", "reason", f.reason, "host", f.host, "serial", f.serial, "detail", f.detail, "remote", r.RemoteAddr)
	http.Error(w, "host refused: "+f.Error(), http.StatusUnauthorized)
}

// authenticate finds the host a request comes from: by the client
// certificate it presented over TLS, else by its bearer credential.
func (g *Gateway) authenticate(r *http.Request) (authenticatedHost, *refusal, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && g.cfg.Authority != nil {
		return g.byCertificate(r)
	}
	cred := iam.BearerToken(r.Header.Get("Authorization"))
	if cred == "" {
		return authenticatedHost{}, &refusal{reason: refusedUnknownCredential, detail: "no credential and no client certificate"}, nil
	}
	host, err := g.q.HostByCredential(r.Context(), iam.Hash(cred))
	if errors.Is(err, pgx.ErrNoRows) {
		return authenticatedHost{}, &refusal{reason: refusedUnknownCredential, detail: "unknown host credential"}, nil
	}
	if err != nil {
		return authenticatedHost{}, nil, fmt.Errorf("find host by credential: %w", err)
	}
	return authenticatedHost{Host: host}, nil, nil
}

// byCertificate checks the client certificate of r: signed by a CA not
// retired, within its validity, of the host r's header names, issued by
// us to that host (its serial), not revoked, of a host that exists.
func (g *Gateway) byCertificate(r *http.Request) (authenticatedHost, *refusal, error) {
	ctx := r.Context()
	leaf := r.TLS.PeerCertificates[0]
	claimed := r.Header.Get(hostproto.HostHeader)
	refuse := func(reason, format string, args ...any) (authenticatedHost, *refusal, error) {
		host := claimed
		if host == "" {
			host = leaf.Subject.CommonName
		}
		return authenticatedHost{}, &refusal{reason: reason, host: host, serial: hostca.SerialHex(leaf), detail: fmt.Sprintf(format, args...)}, nil
	}
	// The chain is checked first, at a time within the certificate's
	// validity, so that a foreign certificate is refused as such whatever
	// its dates.
	now := time.Now()
	within := now
	if within.After(leaf.NotAfter) {
		within = leaf.NotAfter
	}
	if within.Before(leaf.NotBefore) {
		within = leaf.NotBefore
	}
	if err := g.verifyChain(r, within); err != nil {
		return refuse(refusedUnknownCA, "certificate is not signed by a host CA of ours: %v", err)
	}
	if now.After(leaf.NotAfter) {
		return refuse(refusedExpired, "certificate expired at %s: the host needs a new join token (createHostJoinToken)", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(leaf.NotBefore) {
		return refuse(refusedNotYetValid, "certificate is valid from %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	hostID, ok := ids.Decode(ids.Host, leaf.Subject.CommonName)
	if !ok {
		return refuse(refusedUnknownSerial, "certificate names %q, not a host", leaf.Subject.CommonName)
	}
	if claimed != leaf.Subject.CommonName {
		return refuse(refusedOtherHost, "certificate is of host %s, but %s says %q", leaf.Subject.CommonName, hostproto.HostHeader, claimed)
	}
	row, err := g.q.HostByCertificate(ctx, sqlc.HostByCertificateParams{Serial: hostca.SerialHex(leaf), HostID: hostID})
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse(refusedDeletedHost, "host %s does not exist (deleted)", claimed)
	}
	if err != nil {
		return authenticatedHost{}, nil, fmt.Errorf("find host %s by certificate: %w", claimed, err)
	}
	if !row.Issued {
		return refuse(refusedUnknownSerial, "no certificate of this serial was issued to host %s", claimed)
	}
	if row.RevokedAt != nil {
		return refuse(refusedRevoked, "certificate was revoked at %s", row.RevokedAt.UTC().Format(time.RFC3339))
	}
	notAfter := leaf.NotAfter
	return authenticatedHost{Host: row.Host, CertNotAfter: &notAfter}, nil, nil
}

// verifyChain checks that r's client certificate chains to a trusted CA at
// time at, reading the CAs again once when it does not (a rotation
// elsewhere).
func (g *Gateway) verifyChain(r *http.Request, at time.Time) error {
	peers := r.TLS.PeerCertificates
	inter := x509.NewCertPool()
	for _, c := range peers[1:] {
		inter.AddCert(c)
	}
	verify := func() error {
		pool, _, err := g.cfg.Authority.Trust(r.Context())
		if err != nil {
			return err
		}
		_, err = peers[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: at,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err
	}
	if err := verify(); err == nil {
		return nil
	}
	if err := g.cfg.Authority.Refresh(r.Context()); err != nil {
		return err
	}
	return verify()
}
