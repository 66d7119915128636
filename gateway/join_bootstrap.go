package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// ActJoinBootstrap is the audited join of a provider bootstrap's machine:
// it became a host.
const ActJoinBootstrap = "providerBootstrap.join"

// joinBootstrap spends a provider bootstrap's join token, in the join's
// transaction q: the bootstrap's machine becomes a host of the bootstrap's
// pool under the bootstrap's name, and the bootstrap is JOINED with it. ok
// is false when the token is no usable bootstrap token (unknown, used,
// expired, or its bootstrap past its deadline or ended).
func (g *Gateway) joinBootstrap(ctx context.Context, q *sqlc.Queries, tokenHash []byte) (host sqlc.Host, ok bool, err error) {
	b, err := q.BootstrapByToken(ctx, tokenHash)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlc.Host{}, false, nil
	}
	if err != nil {
		return sqlc.Host{}, false, fmt.Errorf("look up bootstrap token: %w", err)
	}
	host, err = q.CreateHost(ctx, sqlc.CreateHostParams{ID: ids.New(), PoolID: b.PoolID, Name: b.Name})
	if err != nil {
		return sqlc.Host{}, false, fmt.Errorf("create host of bootstrap %s: %w", ids.Log(ids.ProviderBootstrap, b.ID), err)
	}
	joined, err := q.JoinBootstrap(ctx, sqlc.JoinBootstrapParams{ID: b.ID, HostID: &host.ID})
	if err != nil {
		return sqlc.Host{}, false, fmt.Errorf("mark bootstrap %s joined: %w", ids.Log(ids.ProviderBootstrap, b.ID), err)
	}
	if err := events.RecordBootstrap(ctx, q, events.Joined, joined); err != nil {
		return sqlc.Host{}, false, err
	}
	if err := audit.Write(ctx, q, audit.Event{
		Action: ActJoinBootstrap, TargetType: "providerBootstrap", TargetID: b.ID,
		Details: map[string]any{"name": b.Name, "host": ids.Encode(ids.Host, host.ID), "serverId": b.ProviderServerID},
	}); err != nil {
		return sqlc.Host{}, false, err
	}
	if err := events.WakePending(ctx, q, b.PoolID); err != nil {
		return sqlc.Host{}, false, err
	}
	g.log.InfoContext(ctx, "a provider bootstrap's machine joined", "bootstrap", ids.Log(ids.ProviderBootstrap, b.ID), "host", ids.Log(ids.Host, host.ID))
	return host, true, nil
}
