package graph

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ratelimit"
)

// An operation over its principal's rate is refused before it runs, so it
// does nothing and writes no audit row. Over HTTP the answer is 429 with
// Retry-After; on a websocket, the operation's error.

// limitOperation takes the operation in ctx from its principal's bucket,
// and returns the refusal to answer with when the bucket is empty.
func limitOperation(ctx context.Context, l *ratelimit.Limiter, p *iam.Principal) *graphql.Response {
	if l == nil {
		return nil
	}
	ok, wait := l.Allow(ctx, p, classOf(graphql.GetOperationContext(ctx).Operation))
	if ok {
		return nil
	}
	if r := refusalFrom(ctx); r != nil {
		r.retryAfter = wait
	}
	return &graphql.Response{Errors: gqlerror.List{toGQL(apierr.Limited(wait), nil)}}
}

// classOf is the bucket an operation takes from: subscriptions start as
// queries do.
func classOf(op *ast.OperationDefinition) ratelimit.Class {
	if op != nil && op.Operation == ast.Mutation {
		return ratelimit.Mutation
	}
	return ratelimit.Query
}

// retryAfterSeconds is a wait in whole seconds, rounded up, at least one:
// what Retry-After and extensions.retryAfter say.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// refusal carries a rate-limit refusal from the operation to the HTTP
// answer it is written in.
type refusal struct {
	// retryAfter is set when the operation was refused.
	retryAfter time.Duration
}

type refusalKey struct{}

func refusalFrom(ctx context.Context) *refusal {
	r, _ := ctx.Value(refusalKey{}).(*refusal)
	return r
}

// withRefusals answers HTTP requests whose operation the rate limit
// refused with 429 and Retry-After instead of 200.
func withRefusals(w http.ResponseWriter, ctx context.Context) (http.ResponseWriter, context.Context) {
	ref := &refusal{}
	return &refusalWriter{ResponseWriter: w, ref: ref}, context.WithValue(ctx, refusalKey{}, ref)
}

// refusalWriter turns the status of a refused operation's answer into 429.
type refusalWriter struct {
	http.ResponseWriter
	ref         *refusal
	wroteHeader bool
}

func (w *refusalWriter) WriteHeader(code int) {
	if !w.wroteHeader && w.ref.retryAfter > 0 && code == http.StatusOK {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(w.ref.retryAfter)))
		code = http.StatusTooManyRequests
	}
	w.wroteHeader = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
