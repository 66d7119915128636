package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// errJoinToken refuses a join token that is unknown, spent or expired.
var errJoinToken = errors.New("unknown, used or expired join token")

// join issues a host its first certificate for the one-time join token it
// presents, spending the token in the same transaction.
func (g *Gateway) join(w http.ResponseWriter, r *http.Request) {
	if !g.overTLS(w, r) {
		return
	}
	token := iam.BearerToken(r.Header.Get("Authorization"))
	if !strings.HasPrefix(token, hostproto.JoinTokenPrefix) {
		g.refuse(w, r, &refusal{reason: refusedJoinToken, detail: "no join token (Authorization: Bearer " + hostproto.JoinTokenPrefix + "…)"})
		return
	}
	hash := iam.Hash(token)
	g.issue(w, r, "host.join", func(ctx context.Context, q *sqlc.Queries) (sqlc.Host, error) {
		hostID, err := q.UseHostJoinToken(ctx, hash)
		if errors.Is(err, pgx.ErrNoRows) {
			host, ok, err := g.joinBootstrap(ctx, q, hash)
			if err != nil {
				return sqlc.Host{}, fmt.Errorf("find bootstrap join token: %w", err)
			}
			if !ok {
				return sqlc.Host{}, errJoinToken
			}
			return host, nil
		}
		if err != nil {
			return sqlc.Host{}, fmt.Errorf("spend join token: %w", err)
		}
		return q.GetHostForUpdate(ctx, hostID)
	})
}

// renew issues a host authenticated by its current certificate a new one,
// for the new key of its signing request.
func (g *Gateway) renew(w http.ResponseWriter, r *http.Request) {
	if !g.overTLS(w, r) {
		return
	}
	if len(r.TLS.PeerCertificates) == 0 {
		g.refuse(w, r, &refusal{reason: refusedUnknownCredential, detail: "renewing needs the current client certificate"})
		return
	}
	auth, ref, err := g.byCertificate(r)
	if err != nil {
		g.fail(w, r, "authenticate host", err)
		return
	}
	if ref != nil {
		g.refuse(w, r, ref)
		return
	}
	g.issue(w, r, "host.renewCertificate", func(ctx context.Context, q *sqlc.Queries) (sqlc.Host, error) {
		return q.GetHostForUpdate(ctx, auth.ID)
	})
}

// overTLS refuses a join or renew that came over the plain listener: a
// join token must not travel in clear, and only TLS carries a certificate.
func (g *Gateway) overTLS(w http.ResponseWriter, r *http.Request) bool {
	if r.TLS != nil && g.cfg.Authority != nil {
		return true
	}
	writeError(w, http.StatusForbidden, apierr.New(apierr.Forbidden, "join and renew only over the TLS host listener (BC_HOST_LISTEN, https://)"))
	return false
}

// issue reads the JoinRequest of r and, in one transaction, finds the host
// with find, checks the signing request is its, issues the certificate and
// audits it as action; it answers the JoinResponse.
func (g *Gateway) issue(w http.ResponseWriter, r *http.Request, action string, find func(context.Context, *sqlc.Queries) (sqlc.Host, error)) {
	var req hostproto.JoinRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, hostproto.MaxJoinBody)).Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, apierr.Invalid("body", "is over %d bytes", hostproto.MaxJoinBody))
			return
		}
		writeError(w, http.StatusBadRequest, apierr.Invalid("body", "is not a join request: %v", err))
		return
	}
	ctx := r.Context()
	var out hostproto.JoinResponse
	err := pgx.BeginFunc(ctx, g.cfg.DB, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		host, err := find(ctx, q)
		if err != nil {
			return err
		}
		csr, err := hostca.ParseCSR([]byte(req.CSR), host.ID)
		if err != nil {
			return err
		}
		issued, err := g.cfg.Authority.Issue(ctx, q, host.ID, csr)
		if err != nil {
			return err
		}
		out = hostproto.JoinResponse{HostID: ids.Encode(ids.Host, host.ID), Certificate: string(issued.Certificate), CABundle: string(issued.Bundle)}
		return audit.Write(ctx, q, audit.Event{Action: action, TargetType: "host", TargetID: host.ID, RequestID: audit.RequestID(ctx),
			Details: map[string]any{"name": host.Name, "serial": issued.Serial, "notAfter": issued.NotAfter}})
	})
	var aerr *apierr.Error
	switch {
	case errors.Is(err, errJoinToken):
		g.refuse(w, r, &refusal{reason: refusedJoinToken, detail: errJoinToken.Error()})
	case errors.As(err, &aerr):
		writeError(w, http.StatusBadRequest, aerr)
	case err != nil:
		g.fail(w, r, "issue host certificate", err)
	default:
		g.log.InfoContext(ctx, "issued a host certificate", "action", action, "host", out.HostID)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}
}

// writeError answers a coded error as a hostproto.Error.
func writeError(w http.ResponseWriter, status int, e *apierr.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(hostproto.Error{Code: string(e.Code), Field: e.Field, Message: e.Message})
}
