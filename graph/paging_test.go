package graph_test

import (
	"fmt"
	"slices"
	"testing"
)

// TestCatalogConnections pages forward and backward through every catalog
// connection holding 0, 1, a page's and a page and one items: each way
// yields every item once, in the list's order, with the page info Relay
// asks for.
func TestCatalogConnections(t *testing.T) {
	t.Parallel()
	const pageSize = 3
	lists := []struct {
		field string
		// maker prepares e and returns what makes an item named name.
		maker func(e *env) func(name string)
	}{
		{"tenantsConnection", func(e *env) func(string) { return func(name string) { e.tenant(name) } }},
		{"poolsConnection", func(e *env) func(string) { return func(name string) { e.pool(name, "vps-host", nil) } }},
		{"flavorsConnection", func(e *env) func(string) { return func(name string) { e.flavor(name, 1, 512) } }},
		{"imagesConnection", func(e *env) func(string) { return func(name string) { e.image(name, "PUBLIC", nil, true) } }},
		{"hostsConnection", func(e *env) func(string) {
			pool := e.pool("hosts", "vps-host", nil)
			return func(name string) {
				e.must(e.operator, `mutation($p: ID!, $n: String!) { createHost(input: {poolId: $p, name: $n}) { host { id } } }`, map[string]any{"p": pool, "n": name}, nil)
			}
		}},
		{"providerAccountsConnection", func(e *env) func(string) {
			return func(name string) {
				e.must(e.operator, createAccount, map[string]any{"in": map[string]any{"name": name, "provider": "HETZNER", "credentials": "token"}}, nil)
			}
		}},
	}
	type page struct {
		TotalCount int
		Nodes      []struct{ Name string }
		PageInfo   struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
	}
	for _, l := range lists {
		for _, n := range []int{0, 1, pageSize, pageSize + 1} {
			t.Run(fmt.Sprintf("%s of %d", l.field, n), func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				add := l.maker(e)
				var byName []string
				for i := range n {
					add(fmt.Sprintf("item-%02d", n-i)) // created in the reverse of their names' order
					byName = append(byName, fmt.Sprintf("item-%02d", i+1))
				}
				query := `query($first: Int, $after: String, $last: Int, $before: String, $order: CatalogOrder) {
					` + l.field + `(first: $first, after: $after, last: $last, before: $before, orderBy: $order) {
						totalCount nodes { name } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
				get := func(vars map[string]any) page {
					t.Helper()
					var out map[string]page
					e.must(e.operator, query, vars, &out)
					p := out[l.field]
					if p.TotalCount != n {
						t.Fatalf("totalCount %d, want %d", p.TotalCount, n)
					}
					if (len(p.Nodes) == 0) != (p.PageInfo.StartCursor == nil) || (len(p.Nodes) == 0) != (p.PageInfo.EndCursor == nil) {
						t.Fatalf("%d items with cursors %v, %v", len(p.Nodes), p.PageInfo.StartCursor, p.PageInfo.EndCursor)
					}
					return p
				}
				names := func(p page) []string {
					var out []string
					for _, x := range p.Nodes {
						out = append(out, x.Name)
					}
					return out
				}
				forward := func(order string) []string {
					t.Helper()
					var seen []string
					vars := map[string]any{"first": pageSize, "order": order}
					for pages := 1; ; pages++ {
						p := get(vars)
						if p.PageInfo.HasPreviousPage != (len(seen) > 0) {
							t.Fatalf("page %d forward: hasPreviousPage %v after %d items", pages, p.PageInfo.HasPreviousPage, len(seen))
						}
						seen = append(seen, names(p)...)
						if p.PageInfo.HasNextPage != (len(seen) < n) {
							t.Fatalf("page %d forward: hasNextPage %v with %d of %d seen", pages, p.PageInfo.HasNextPage, len(seen), n)
						}
						if !p.PageInfo.HasNextPage {
							return seen
						}
						vars["after"] = *p.PageInfo.EndCursor
					}
				}
				if got := forward("NAME"); !slices.Equal(got, byName) {
					t.Errorf("forward by name: %v, want %v", got, byName)
				}
				created := slices.Clone(byName)
				slices.Reverse(created)
				if got := forward("OLDEST_FIRST"); !slices.Equal(got, created) {
					t.Errorf("forward oldest first: %v, want %v", got, created)
				}
				var seen []string
				vars := map[string]any{"last": pageSize}
				for pages := 1; ; pages++ {
					p := get(vars)
					if p.PageInfo.HasNextPage != (len(seen) > 0) {
						t.Fatalf("page %d backward: hasNextPage %v after %d items", pages, p.PageInfo.HasNextPage, len(seen))
					}
					seen = append(names(p), seen...)
					if p.PageInfo.HasPreviousPage != (len(seen) < n) {
						t.Fatalf("page %d backward: hasPreviousPage %v with %d of %d seen", pages, p.PageInfo.HasPreviousPage, len(seen), n)
					}
					if !p.PageInfo.HasPreviousPage {
						break
					}
					vars["before"] = *p.PageInfo.StartCursor
				}
				if !slices.Equal(seen, byName) {
					t.Errorf("backward by name: %v, want %v", seen, byName)
				}
			})
		}
	}
	t.Run("bad arguments are refused with their field", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		for _, c := range []struct{ args, field string }{
			{"first: 101", "first"}, {"last: -1", "last"}, {"first: 1, last: 1", "last"},
			{`after: "nope"`, "after"}, {`before: "eyJuIjoiIn0"`, "before"},
		} {
			r := e.do(e.operator, `{ flavorsConnection(`+c.args+`) { totalCount } }`, nil)
			if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != c.field {
				t.Errorf("%s: %+v", c.args, r.Errors)
			}
		}
	})
}
