// Package audit writes the audit trail: one event for every mutation,
// successful or not.
package audit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// Event is one audited action.
type Event struct {
	PrincipalID uuid.UUID
	TenantID    uuid.UUID
	Action      string
	TargetType  string
	TargetID    uuid.UUID
	RequestID   string
	// ErrorCode is empty on success.
	ErrorCode string
	Details   map[string]any
	// Written says a mutation wrote its success itself, ahead of a lock it
	// then holds to its commit (admission's tenant lock), so that the lock
	// is not held for the write; it is not written again. A failure is
	// written whatever it says.
	Written bool
}

// Write records e with q, inside whatever transaction q runs in.
func Write(ctx context.Context, q *sqlc.Queries, e Event) error {
	details := []byte("{}")
	if len(e.Details) > 0 {
		var err error
		if details, err = json.Marshal(e.Details); err != nil {
			return fmt.Errorf("audit %s: encode details: %w", e.Action, err)
		}
	}
	outcome := "success"
	if e.ErrorCode != "" {
		outcome = "failure"
	}
	err := q.InsertAuditEvent(ctx, sqlc.InsertAuditEventParams{
		PrincipalID: nilIfZero(e.PrincipalID),
		TenantID:    nilIfZero(e.TenantID),
		Action:      e.Action,
		TargetType:  e.TargetType,
		TargetID:    nilIfZero(e.TargetID),
		RequestID:   e.RequestID,
		Outcome:     outcome,
		ErrorCode:   e.ErrorCode,
		Details:     details,
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

func nilIfZero(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the id of the request it serves.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id of ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
