package domain

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// AuditEvent is one audited attempt at a mutation, successful or not.
type AuditEvent struct {
	// ID is the event's sequence number.
	ID int64
	At time.Time
	// PrincipalID is nil for the server's own commands.
	PrincipalID *uuid.UUID
	TenantID    *uuid.UUID
	Action      string
	TargetType  string
	TargetID    *uuid.UUID
	RequestID   string
	// Outcome is success or failure; ErrorCode is a failure's API error code.
	Outcome   string
	ErrorCode string
	// Details is a JSON object.
	Details json.RawMessage
}

// AuditEventFromRow maps an audit_events row.
func AuditEventFromRow(r sqlc.AuditEvent) AuditEvent {
	return AuditEvent{
		ID: r.ID, At: r.At, PrincipalID: r.PrincipalID, TenantID: r.TenantID, Action: r.Action, TargetType: r.TargetType,
		TargetID: r.TargetID, RequestID: r.RequestID, Outcome: r.Outcome, ErrorCode: r.ErrorCode, Details: r.Details,
	}
}
