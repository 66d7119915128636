// Package pguuid has pgx encode uuid.UUID values as the 16 bytes they are.
//
// Without it pgx encodes a uuid.UUID in an array (an `id = ANY($1)` of
// many IDs) through its driver.Valuer: as a string, which the binary UUID
// encoding refuses, with an error built by fmt for every element, and
// then parses again. In the gateway's idle profile at 10,000 instances
// that was a fifth of serve's CPU.
package pguuid

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Register makes m encode uuid.UUID values directly.
func Register(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapEncodePlan}, m.TryWrapEncodePlanFuncs...)
}

// AfterConnect is a pgxpool.Config.AfterConnect that registers on each
// connection.
func AfterConnect(_ context.Context, c *pgx.Conn) error {
	Register(c.TypeMap())
	return nil
}

func tryWrapEncodePlan(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	switch v := value.(type) {
	case uuid.UUID:
		return &encodePlan{}, [16]byte(v), true
	case *uuid.UUID: // a *uuid.UUID is a driver.Valuer too
		return &encodePlan{}, [16]byte{}, true
	}
	return nil, nil, false
}

// encodePlan encodes a uuid.UUID, or a *uuid.UUID (nil: NULL), as a
// [16]byte, which pgtype's UUID codec takes as it is.
type encodePlan struct{ next pgtype.EncodePlan }

func (p *encodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *encodePlan) Encode(value any, buf []byte) ([]byte, error) {
	switch v := value.(type) {
	case *uuid.UUID:
		if v == nil {
			return nil, nil
		}
		return p.next.Encode([16]byte(*v), buf)
	default:
		return p.next.Encode([16]byte(value.(uuid.UUID)), buf)
	}
}
