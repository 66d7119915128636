package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/sqlc"
)

// adoptProtocol records, in q's transaction, the protocol version a host
// speaks. When it changed it returns the pool's pending instances: an
// upgraded host may take some that need its new version. A host row read
// with the version already recorded costs no statement.
func adoptProtocol(ctx context.Context, q *sqlc.Queries, host sqlc.Host, version int) ([]uuid.UUID, error) {
	if speaks(host, version) {
		return nil, nil
	}
	changed, err := q.SetHostProtocol(ctx, sqlc.SetHostProtocolParams{ID: host.ID, Protocol: ptr(int16(version))})
	if err != nil {
		return nil, fmt.Errorf("record protocol: %w", err)
	}
	if changed == 0 {
		return nil, nil
	}
	pending, err := q.PendingInPool(ctx, host.PoolID)
	if err != nil {
		return nil, fmt.Errorf("list pending instances: %w", err)
	}
	return pending, nil
}

// speaks says whether host's row has version recorded.
func speaks(host sqlc.Host, version int) bool {
	return host.Protocol != nil && int(*host.Protocol) == version
}

// noteProtocol records the version a host polls its spec with, when it is
// not the one recorded: a daemon that restarted at another version says so
// before its first report.
func (g *Gateway) noteProtocol(ctx context.Context, host sqlc.Host, version int) error {
	if speaks(host, version) {
		return nil // no transaction either
	}
	return pgx.BeginFunc(ctx, g.cfg.DB, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		wake, err := adoptProtocol(ctx, q, host, version)
		if err != nil {
			return err
		}
		return events.Wake(ctx, q, wake)
	})
}

// behindError refuses a spec to a host that holds instances needing a newer
// protocol than it speaks (its daemon was downgraded): rendered for its
// version it would misapply them. Refused, it keeps them as they are.
type behindError struct {
	host      string
	version   int
	need      int
	instances []string
}

func (e *behindError) Error() string {
	return fmt.Sprintf("host %s speaks host protocol %d but holds instances that need %d (%s): upgrade its daemon; until then it is sent no spec and they run untouched",
		e.host, e.version, e.need, strings.Join(e.instances, ", "))
}

// refuseSpec logs a refused spec once per reason, not on every retry.
func (g *Gateway) refuseSpec(ctx context.Context, host sqlc.Host, err *behindError) {
	msg := err.Error()
	if prev, loaded := g.refused.Swap(host.ID, msg); loaded && prev == msg {
		return
	}
	g.log.WarnContext(ctx, "refused a host's spec", "host", host.Name, "err", msg)
}

func ptr[T any](v T) *T { return &v }
