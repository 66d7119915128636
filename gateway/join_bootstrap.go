package gateway

import (
	"context"

	"github.com/better-compute/vps/sqlc"
)

// joinBootstrap is where a join token that no adopted host holds is looked
// up next: the tokens of provider bootstraps (issue 16 part 3), whose
// machine joins as a new host. It runs in the join's transaction (q) and
// returns the host the token made, ok false when the token is not one.
// Provider bootstraps fill it in; until then no token is one.
func (g *Gateway) joinBootstrap(ctx context.Context, q *sqlc.Queries, tokenHash []byte) (sqlc.Host, bool, error) {
	return sqlc.Host{}, false, nil
}
