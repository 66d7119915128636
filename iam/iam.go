// Package iam authenticates API tokens and says what a principal may see.
//
// There are two roles: an operator sees and changes everything; a member
// belongs to one tenant and sees only that tenant's objects.
package iam

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/sqlc"
)

// Role is what a principal may do.
type Role string

// The roles.
const (
	Operator Role = "operator"
	Member   Role = "member"
)

// Principal is an authenticated caller.
type Principal struct {
	ID       uuid.UUID
	Name     string
	Role     Role
	TenantID uuid.UUID // uuid.Nil for operators
	TokenID  uuid.UUID
	// ExpiresAt is when the token stops working; zero when it never does.
	ExpiresAt time.Time
}

// IsOperator reports whether p is an operator.
func (p *Principal) IsOperator() bool { return p.Role == Operator }

// CanSee reports whether p may see an object of tenant (uuid.Nil: a shared
// object, visible to all).
func (p *Principal) CanSee(tenant uuid.UUID) bool {
	return p.IsOperator() || tenant == uuid.Nil || tenant == p.TenantID
}

// TenantFilter is the tenant a list must be limited to: nil for operators.
func (p *Principal) TenantFilter() *uuid.UUID {
	if p.IsOperator() {
		return nil
	}
	t := p.TenantID
	return &t
}

const tokenPrefix = "bct_"

// NewSecret returns a fresh random credential with prefix and the hash to
// store for it.
func NewSecret(prefix string) (secret string, hash []byte) {
	b := make([]byte, 32)
	rand.Read(b)
	secret = prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, Hash(secret)
}

// NewToken returns a fresh API token and the hash to store for it.
func NewToken() (token string, hash []byte) { return NewSecret(tokenPrefix) }

// Hash is how tokens and host credentials are stored.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// ErrUnauthenticated is returned for a missing, unknown, revoked or expired token.
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticate returns the principal behind token.
func Authenticate(ctx context.Context, q *sqlc.Queries, token string) (*Principal, error) {
	if token == "" {
		return nil, ErrUnauthenticated
	}
	row, err := q.Authenticate(ctx, Hash(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	p := &Principal{ID: row.ID, Name: row.Name, Role: Role(row.Role), TokenID: row.TokenID}
	if row.TenantID != nil {
		p.TenantID = *row.TenantID
	}
	if row.ExpiresAt != nil {
		p.ExpiresAt = *row.ExpiresAt
	}
	return p, nil
}

// BearerToken extracts the token from an Authorization header value.
func BearerToken(header string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of ctx, or nil.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
