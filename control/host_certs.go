package control

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/sqlc"
)

// DefaultJoinTokenTTL is how long a host's join token may be used.
const DefaultJoinTokenTTL = time.Hour

// HostJoin is a one-time join token of a host, shown once: only its hash is
// stored.
type HostJoin struct {
	// Token is the join token (bcj_…).
	Token string
	// Command is the host daemon's command line that joins with it; empty
	// when serve has no host TLS listener.
	Command string
	// ExpiresAt is when the token stops working.
	ExpiresAt time.Time
}

// joinPin is the fingerprint a join command pins, made before a mutation
// (it may make the first CA); empty without a host listener.
func (s *Service) joinPin(ctx context.Context) (string, error) {
	if s.hostCA == nil || s.hostURL == "" {
		return "", nil
	}
	pin, err := s.hostCA.ServerFingerprint(ctx)
	if err != nil {
		return "", fmt.Errorf("host CA: %w", err)
	}
	return pin, nil
}

// newJoinToken stores a fresh join token for a host with q and returns it
// with its command, which pins the CA of fingerprint pin.
func (s *Service) newJoinToken(ctx context.Context, q *sqlc.Queries, hostID uuid.UUID, pin string) (HostJoin, error) {
	token, hash := iam.NewSecret(hostproto.JoinTokenPrefix)
	j := HostJoin{Token: token, ExpiresAt: time.Now().Add(s.joinTokenTTL)}
	if err := q.InsertHostJoinToken(ctx, sqlc.InsertHostJoinTokenParams{TokenHash: hash, HostID: hostID, ExpiresAt: j.ExpiresAt}); err != nil {
		return HostJoin{}, fmt.Errorf("store join token: %w", err)
	}
	if pin != "" {
		j.Command = fmt.Sprintf("better-compute host --server %s --join-token %s --ca-sha256 %s", s.hostURL, token, pin)
	}
	return j, nil
}

// CreateHostJoinToken gives a host a new one-time join token, as after its
// certificates were revoked or expired. Operators only.
func (s *Service) CreateHostJoinToken(ctx context.Context, hostID uuid.UUID) (NewHost, error) {
	var out NewHost
	pin, err := s.joinPin(ctx)
	if err != nil {
		return out, err
	}
	err = s.mutate(ctx, ActCreateHostJoinToken, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = hostID
		if _, err := operator(ctx); err != nil {
			return err
		}
		host, err := q.GetHostForUpdate(ctx, hostID)
		if err != nil {
			return notFound(err, "hostId", "host")
		}
		if out.Join, err = s.newJoinToken(ctx, q, hostID, pin); err != nil {
			return err
		}
		out.Host = domain.HostFromRow(host)
		ev.Details = map[string]any{"expiresAt": out.Join.ExpiresAt}
		return nil
	})
	return out, err
}

// RevokeHostCertificates revokes every certificate of a host: the gateway
// refuses them at once. The host joins again with a new join token.
// Operators only.
func (s *Service) RevokeHostCertificates(ctx context.Context, hostID uuid.UUID) (domain.Host, error) {
	var host sqlc.Host
	err := s.mutate(ctx, ActRevokeHostCerts, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = hostID
		if _, err := operator(ctx); err != nil {
			return err
		}
		if _, err := q.GetHostForUpdate(ctx, hostID); err != nil {
			return notFound(err, "hostId", "host")
		}
		n, err := q.RevokeHostCertificates(ctx, hostID)
		if err != nil {
			return fmt.Errorf("revoke certificates: %w", err)
		}
		if host, err = q.RefreshHostCertNotAfter(ctx, hostID); err != nil {
			return fmt.Errorf("revoke certificates: %w", err)
		}
		ev.Details = map[string]any{"revoked": n}
		return nil
	})
	return domain.HostFromRow(host), err
}
