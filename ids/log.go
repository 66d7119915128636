package ids

import (
	"log/slog"

	"github.com/google/uuid"
)

// Log returns id as logs name it, its API ID, encoded only when a line is
// written: "instance", ids.Log(ids.Instance, id). Logs never hold raw
// UUIDs, so an operator can paste what they read into the API.
func Log(k Kind, id uuid.UUID) slog.LogValuer { return logID{k, id} }

type logID struct {
	k  Kind
	id uuid.UUID
}

func (l logID) LogValue() slog.Value { return slog.StringValue(Encode(l.k, l.id)) }

// String is the API ID, for an error's text.
func (l logID) String() string { return Encode(l.k, l.id) }
