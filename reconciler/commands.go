package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// command is a host command to queue.
type command struct {
	host    uuid.UUID
	kind    string
	lane    hostproto.Lane
	payload any
	// timeout is how long the host has from now; past it the command
	// fails and the host is told to abandon it.
	timeout time.Duration
}

// hostTooOldError refuses a command for a host whose daemon speaks a
// protocol without commands: it would never see it. Its message is a
// reason to show (a snapshot's, say).
type hostTooOldError struct {
	host     string
	protocol int
}

func (e *hostTooOldError) Error() string {
	return fmt.Sprintf("host %s speaks host protocol %d; host commands need %d or later (upgrade its daemon)", e.host, e.protocol, hostproto.CommandsVersion)
}

// queueCommand queues c in q's transaction and bumps its host's spec
// generation, so the host's long-poll answers with it; the host is added
// to wake, to be woken once the transaction commits. It returns the
// command's row. A host whose recorded protocol is older than
// hostproto.CommandsVersion is refused with a *hostTooOldError, and
// nothing is written. It locks the host's row (after whatever the caller
// locked, as every step that bumps a generation does).
func queueCommand(ctx context.Context, q *sqlc.Queries, c command, wake *[]uuid.UUID) (sqlc.HostCommand, error) {
	payload, err := json.Marshal(c.payload)
	if err != nil {
		return sqlc.HostCommand{}, fmt.Errorf("queue %s command: encode payload: %w", c.kind, err)
	}
	host, err := q.LockCommandHost(ctx, c.host)
	if err != nil {
		return sqlc.HostCommand{}, fmt.Errorf("queue %s command: lock host: %w", c.kind, err)
	}
	if v := domain.SpokenProtocol(host.Protocol); v < hostproto.CommandsVersion {
		return sqlc.HostCommand{}, &hostTooOldError{host: host.Name, protocol: v}
	}
	row, err := q.InsertHostCommand(ctx, sqlc.InsertHostCommandParams{
		ID: ids.New(), HostID: c.host, Kind: c.kind, Lane: string(c.lane), Payload: payload, Deadline: time.Now().Add(c.timeout),
	})
	if err != nil {
		return sqlc.HostCommand{}, fmt.Errorf("queue %s command: %w", c.kind, err)
	}
	if _, err := q.BumpHostGeneration(ctx, c.host); err != nil {
		return sqlc.HostCommand{}, fmt.Errorf("queue %s command: bump host generation: %w", c.kind, err)
	}
	*wake = append(*wake, c.host)
	return row, nil
}
