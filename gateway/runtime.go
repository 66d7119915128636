package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/better-compute/vps/sqlc"
)

// runtimeError refuses a host whose daemon runs another runtime than its
// pool's: the pool's instances were placed for the pool's runtime.
type runtimeError struct {
	host, said, pool string
}

func (e *runtimeError) Error() string {
	return fmt.Sprintf("host %s runs runtime %s but its pool runs %s: run the host daemon with its pool's runtime, or adopt the host into a pool of runtime %s",
		e.host, e.said, e.pool, e.said)
}

// checkRuntime records the runtime a host's daemon says it runs
// (hostproto.RuntimeHeader) and refuses it when it is not its pool's. A
// daemon that does not say (older than protocol 3) is not checked.
func (g *Gateway) checkRuntime(ctx context.Context, host sqlc.Host, said string) error {
	if said == "" {
		return nil
	}
	if host.Runtime == nil || *host.Runtime != said {
		if err := g.q.SetHostRuntime(ctx, sqlc.SetHostRuntimeParams{ID: host.ID, Runtime: &said}); err != nil {
			return fmt.Errorf("record host runtime: %w", err)
		}
	}
	pool, err := g.poolRuntime(ctx, host.PoolID)
	if err != nil {
		return err
	}
	if pool != nil && *pool == said {
		g.runtimeRefused.Delete(host.ID)
		return nil
	}
	e := &runtimeError{host: host.Name, said: said, pool: "none"}
	if pool != nil {
		e.pool = *pool
	}
	if _, logged := g.runtimeRefused.Swap(host.ID, e.Error()); !logged {
		g.log.WarnContext(ctx, "refused a host of another runtime than its pool's", "host", host.Name, "err", e.Error())
	}
	return e
}

// poolRuntime is the runtime of a pool's hosts (nil: a pool without hosts),
// read from the database the first time a pool's host asks.
func (g *Gateway) poolRuntime(ctx context.Context, pool uuid.UUID) (*string, error) {
	if rt, ok := g.poolRuntimes.Load(pool); ok {
		return rt.(*string), nil
	}
	rt, err := g.q.PoolRuntime(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("read pool runtime: %w", err)
	}
	g.poolRuntimes.Store(pool, rt)
	return rt, nil
}

// refuseRuntime answers a host refused by checkRuntime with 400 and why,
// which its daemon logs; any other error is the gateway's own.
func (g *Gateway) refuseRuntime(w http.ResponseWriter, r *http.Request, err error) {
	if e := (*runtimeError)(nil); errors.As(err, &e) {
		http.Error(w, e.Error(), http.StatusBadRequest)
		return
	}
	g.fail(w, r, "check host runtime", err)
}
