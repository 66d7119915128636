// Package graph is the GraphQL API: the schema (schema/*.graphqls) and its
// resolvers, one file per schema file; gqlgen generates the executor that
// calls them into package graph/generated. Resolvers translate between the
// API and package control, which does the work.
package graph

//go:generate go run -C ../tools github.com/99designs/gqlgen generate --config ../gqlgen.yml

import (
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/live"
)

// Resolver is the root resolver.
type Resolver struct {
	svc     *control.Service
	live    *live.Hub
	maxSubs int
	// fan groups websocket subscriptions of one shape; nil serves each
	// alone.
	fan *fanout
}
