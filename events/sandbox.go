package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// The steps of a sandbox's life, beyond Created and Deleted.
const (
	// Started: its instance first reached RUNNING (from a warm or a cold
	// start, as the sandbox's startedFrom says).
	Started Type = "STARTED"
	// Paused: its instance paused, as its owner asked.
	Paused Type = "PAUSED"
	// Resumed: its instance runs again after a pause.
	Resumed Type = "RESUMED"
	// TimeoutChanged: its deadline was set again.
	TimeoutChanged Type = "TIMEOUT_CHANGED"
	// Expired: it reached its deadline and ended.
	Expired Type = "EXPIRED"
	// Failed: its instance went to ERROR or LOST.
	Failed Type = "FAILED"
)

// KindSandbox is the Kind of sandbox events.
const KindSandbox = "sandbox"

// SandboxView is a domain.Sandbox as events carry it, with the API's
// encoded IDs.
type SandboxView struct {
	ID              string `json:"id"`
	TenantID        string `json:"tenantId"`
	TemplateID      string `json:"templateId"`
	TemplateVersion int64  `json:"templateVersion"`
	InstanceID      string `json:"instanceId"`
	// FromSnapshot is the snapshot it was restored from; empty for one
	// made from its template's image.
	FromSnapshot string            `json:"fromSnapshot,omitempty"`
	State        string            `json:"state"`
	StartedFrom  string            `json:"startedFrom"`
	Metadata     map[string]string `json:"metadata"`
	ExpiresAt    time.Time         `json:"expiresAt"`
	EndedAt      *time.Time        `json:"endedAt,omitempty"`
	CreatedAt    time.Time         `json:"createdAt"`
	UpdatedAt    time.Time         `json:"updatedAt"`
	Version      int64             `json:"version"`
}

// SandboxEvent is one step of one sandbox's life. Version numbers the
// sandbox's events from 1, in the order they were committed: clients
// order and dedupe by it.
type SandboxEvent struct {
	Kind    string      `json:"kind"`
	Type    Type        `json:"type"`
	Sandbox SandboxView `json:"sandbox"`
	Version int64       `json:"version"`
	// Reason says why, for Failed (the instance's state reason) and
	// Expired.
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// ViewSandbox returns the event view of sbx.
func ViewSandbox(sbx domain.Sandbox) SandboxView {
	v := SandboxView{
		ID:              ids.Encode(ids.Sandbox, sbx.ID),
		TenantID:        ids.Encode(ids.Tenant, sbx.TenantID),
		TemplateID:      ids.Encode(ids.SandboxTemplate, sbx.TemplateID),
		TemplateVersion: sbx.TemplateVersion,
		InstanceID:      ids.Encode(ids.Instance, sbx.InstanceID),
		State:           sbx.State,
		StartedFrom:     sbx.StartedFrom,
		Metadata:        sbx.Metadata,
		ExpiresAt:       sbx.ExpiresAt,
		EndedAt:         sbx.EndedAt,
		CreatedAt:       sbx.CreatedAt,
		UpdatedAt:       sbx.UpdatedAt,
		Version:         sbx.Version,
	}
	if sbx.FromSnapshot != nil {
		v.FromSnapshot = ids.Encode(ids.SandboxSnapshot, *sbx.FromSnapshot)
	}
	return v
}

// Sandbox turns an event's view back into the Sandbox it shows. An ID that
// is not of its kind is an error.
func (v SandboxView) Sandbox() (domain.Sandbox, error) {
	sbx := domain.Sandbox{
		TemplateVersion: v.TemplateVersion, State: v.State, StartedFrom: v.StartedFrom, Metadata: v.Metadata,
		ExpiresAt: v.ExpiresAt, EndedAt: v.EndedAt, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, Version: v.Version,
	}
	if sbx.Metadata == nil {
		sbx.Metadata = map[string]string{}
	}
	var d idDecoder
	sbx.ID = d.id(ids.Sandbox, "id", v.ID)
	sbx.TenantID = d.id(ids.Tenant, "tenantId", v.TenantID)
	sbx.TemplateID = d.id(ids.SandboxTemplate, "templateId", v.TemplateID)
	sbx.InstanceID = d.id(ids.Instance, "instanceId", v.InstanceID)
	sbx.FromSnapshot = d.optional(ids.SandboxSnapshot, "fromSnapshot", &v.FromSnapshot)
	if err := d.err("sandbox", v.ID); err != nil {
		return domain.Sandbox{}, err
	}
	return sbx, nil
}

// SandboxEventFromRow maps a sandbox_events row.
func SandboxEventFromRow(r sqlc.SandboxEvent) (SandboxEvent, error) {
	ev := SandboxEvent{Kind: KindSandbox, Type: Type(r.Type), Version: r.Seq, Reason: r.Reason, At: r.At}
	if err := json.Unmarshal(r.Sandbox, &ev.Sandbox); err != nil {
		return SandboxEvent{}, fmt.Errorf("decode event %d of sandbox %s: %w", r.Seq, r.SandboxID, err)
	}
	return ev, nil
}

// RecordSandbox records a step of a sandbox's life in the transaction of
// q: a row of its history (Sandbox.events) and the outbox row that
// publishes it to subscribers after commit, with the sandbox as the
// transaction left it. The caller holds the lock of the sandbox's
// instance's row (it locked or changed it in this transaction), as every
// writer of a sandbox's events does, so the events are numbered in
// commit order. The vps.sandboxes reconciler records Expired with it, in
// the transaction that ends an expired sandbox.
func RecordSandbox(ctx context.Context, q *sqlc.Queries, sandbox uuid.UUID, typ Type, reason string) error {
	row, err := q.GetSandbox(ctx, sandbox)
	if err != nil {
		return fmt.Errorf("read sandbox %s for its %s event: %w", sandbox, typ, err)
	}
	return recordSandbox(ctx, q, domain.SandboxFromRow(row), typ, reason)
}

func recordSandbox(ctx context.Context, q *sqlc.Queries, sbx domain.Sandbox, typ Type, reason string) error {
	view, err := json.Marshal(ViewSandbox(sbx))
	if err != nil {
		return fmt.Errorf("encode sandbox %s: %w", sbx.ID, err)
	}
	row, err := q.InsertSandboxEvent(ctx, sqlc.InsertSandboxEventParams{
		SandboxID: sbx.ID, TenantID: sbx.TenantID, Type: string(typ), Reason: reason, Sandbox: view,
	})
	if err != nil {
		return fmt.Errorf("record %s of sandbox %s: %w", typ, sbx.ID, err)
	}
	ev, err := SandboxEventFromRow(row)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event of sandbox %s: %w", sbx.ID, err)
	}
	channel := TenantChannel(sbx.TenantID)
	if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicEvents, Key: sbx.ID, Channel: &channel, Payload: payload}); err != nil {
		return fmt.Errorf("enqueue event of sandbox %s: %w", sbx.ID, err)
	}
	return nil
}

// SandboxStep records what a change of a sandbox's instance means for
// the sandbox, in the transaction of q that changed it: Started when the
// sandbox first runs, Paused and Resumed when it pauses and runs again,
// Failed when its instance goes to ERROR or LOST. Enqueue calls it for
// every change of an instance of a sandbox, so the steps the reconciler
// causes are recorded where it records the instance's; createSandbox
// calls it once the sandbox exists, for a claimed instance that already
// runs. Nothing is recorded for a sandbox not inserted yet or ended.
func SandboxStep(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance) error {
	if inst.SandboxID == nil {
		return nil
	}
	switch inst.State {
	case "RUNNING", "REBOOTING", "PAUSED", "ERROR", "LOST":
	default:
		return nil // no step: the sandbox is STARTING or ending
	}
	row, err := q.GetSandbox(ctx, *inst.SandboxID)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // claimed by a sandbox this transaction inserts next
		}
		return fmt.Errorf("read sandbox of instance %s: %w", inst.ID, err)
	}
	sbx := domain.SandboxFromRow(row)
	if sbx.Ended() {
		return nil
	}
	so, err := q.SandboxEventsSoFar(ctx, sbx.ID)
	if err != nil {
		return fmt.Errorf("read events of sandbox %s: %w", sbx.ID, err)
	}
	var typ Type
	reason := ""
	switch sbx.State {
	case domain.SandboxRunning:
		switch {
		case !so.Started:
			typ = Started
		case so.LastType == string(Paused):
			typ = Resumed
		}
	case domain.SandboxPaused:
		if so.LastType != string(Paused) {
			typ = Paused
		}
	case domain.SandboxError, domain.SandboxLost:
		if so.LastType != string(Failed) || so.LastState != sbx.State {
			typ, reason = Failed, inst.StateReason
		}
	}
	if typ == "" || so.LastType == "" {
		return nil // nothing new, or the sandbox's creation is not recorded yet
	}
	return recordSandbox(ctx, q, sbx, typ, reason)
}

// Published is a published event, decoded: one of its fields is set, or
// none for a kind this build does not know.
type Published struct {
	Instance  *InstanceEvent
	Sandbox   *SandboxEvent
	Bootstrap *BootstrapEvent
}

// Decode decodes a published event: an instance's, a sandbox's or a
// provider bootstrap's.
func Decode(payload []byte) (Published, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(payload, &head); err != nil {
		return Published{}, fmt.Errorf("decode event: %w", err)
	}
	var p Published
	var into any
	switch head.Kind {
	case KindInstance:
		p.Instance = &InstanceEvent{}
		into = p.Instance
	case KindSandbox:
		p.Sandbox = &SandboxEvent{}
		into = p.Sandbox
	case KindBootstrap:
		p.Bootstrap = &BootstrapEvent{}
		into = p.Bootstrap
	default:
		return Published{}, nil
	}
	if err := json.Unmarshal(payload, into); err != nil {
		return Published{}, fmt.Errorf("decode %s event: %w", head.Kind, err)
	}
	return p, nil
}

// WakePool asks, in the transaction of q, for the upkeep of a template's
// warm pool: after a change to the template or to one of its warm
// instances, so the pool does not wait for the vps.sandboxes interval.
func WakePool(ctx context.Context, q *sqlc.Queries, template uuid.UUID) error {
	if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicSandboxes, Key: template}); err != nil {
		return fmt.Errorf("wake the upkeep of template %s's warm pool: %w", template, err)
	}
	return nil
}
