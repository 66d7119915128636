package graph_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/graph"
)

// repeated is the document of finding 1 in issue 12: n copies of one
// selection, which gqlparser's overlapping-fields check compares pairwise.
func repeated(n int) string {
	return "{ " + strings.Repeat("viewer { principal { name } } ", n) + "}"
}

// nested is an introspection query n fields deep.
func nested(n int) string {
	return "{ __schema { types { " + strings.Repeat("ofType { ", n-3) + "name" + strings.Repeat(" }", n-3) + " } } }"
}

// fragmentChain reaches depth n through fragments each one field deep, so
// no brace nesting shows it.
func fragmentChain(n int) string {
	var b strings.Builder
	b.WriteString("{ __schema { types { ...F0 } } }\n")
	for i := range n - 2 {
		fmt.Fprintf(&b, "fragment F%d on __Type { ofType { ...F%d } }\n", i, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on __Type { name }\n", n-2)
	return b.String()
}

// fragmentBomb spreads each fragment twice in the next: few tokens,
// 2^n selections once expanded.
func fragmentBomb(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{ viewer { principal { ...F%d } } }\n", n)
	b.WriteString("fragment F0 on Principal { name }\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "fragment F%d on Principal { ...F%d ...F%d }\n", i, i-1, i-1)
	}
	return b.String()
}

// manyTokens is a small query with a long list argument.
func manyTokens(n int) string {
	return `{ node(id: [` + strings.Repeat(`"x" `, n) + `]) { id } }`
}

// TestDocumentLimits: documents past a limit are refused before they are
// validated, with INVALID_INPUT naming the limit, and each refusal is logged
// once with its size and request id.
func TestDocumentLimits(t *testing.T) {
	t.Parallel()
	logs := &logSink{}
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Logger = slogOf(logs) })
	for _, c := range []struct {
		name, query, limit string
	}{
		{"selections", repeated(600), "selections"},
		{"selections through fragments", fragmentBomb(12), "selections"},
		{"depth", nested(40), "depth"},
		{"depth through fragments", fragmentChain(25), "depth"},
		{"tokens", manyTokens(10_001), "tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(logs.logged("graphql document refused"))
			r := e.do(e.operator, c.query, nil)
			if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Limit != c.limit {
				t.Fatalf("errors = %+.300v, want INVALID_INPUT with limit %s", r.Errors, c.limit)
			}
			recs := logs.logged("graphql document refused")
			if len(recs) != before+1 {
				t.Fatalf("%d log lines for one refusal", len(recs)-before)
			}
			rec := recs[len(recs)-1]
			if rec.Attrs["reason"] != c.limit || rec.Attrs["request_id"] != "req-test" || rec.Attrs["bytes"] != int64(len(c.query)) {
				t.Fatalf("logged %v", rec.Attrs)
			}
		})
	}
}

// TestDocumentLimitsFitRealQueries: what GraphiQL sends to draw its docs
// and the console's deepest query stay within the default limits.
func TestDocumentLimitsFitRealQueries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	introspection, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	e.must(e.operator, string(introspection), nil, nil)
	// web/static/js/pages/instance.js
	r := e.do(e.operator, `query Instance($id: ID!) { instance(id: $id) {
		id name state desiredState stateReason addresses version createdAt updatedAt imageVerified
		pool { id name class } flavor { name vcpus memoryMb diskGb gpuCount gpuModel }
		image { name format } sshKeys { type fingerprint comment } tenant { name } host { name } } }`,
		map[string]any{"id": "ins_00000000000000000000000000"})
	if r.code() != "" && r.code() != "NOT_FOUND" {
		t.Fatalf("the console's instance query: %+v", r.Errors)
	}
	e.must(e.operator, nested(20), nil, nil)
	e.must(e.operator, repeated(166), nil, nil) // 498 selections
}

// TestDocumentTimeout: validation that runs past DocumentTimeout is
// stopped, and the document refused.
func TestDocumentTimeout(t *testing.T) {
	t.Parallel()
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Limits.DocumentTimeout = time.Nanosecond })
	r := e.do(e.operator, repeated(100), nil)
	if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Limit != "time" {
		t.Fatalf("errors = %+v, want INVALID_INPUT with limit time", r.Errors)
	}
}
