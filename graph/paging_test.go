package graph_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// pageSize is the page the connection tests ask for.
const pageSize = 3

// walk pages through a connection field as token, pageSize at a time,
// forward from its start (or backward from its end) in order, checking
// each page's info as Relay defines it, and returns the items' IDs in the
// list's order.
func walk(t *testing.T, e *env, token, field, orderType, order string, backward bool, n int) []string {
	t.Helper()
	query := `query($first: Int, $after: String, $last: Int, $before: String, $order: ` + orderType + `) {
		` + field + `(first: $first, after: $after, last: $last, before: $before, orderBy: $order) {
			totalCount nodes { id } edges { cursor } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
	type page struct {
		TotalCount int
		Nodes      []struct{ ID string }
		Edges      []struct{ Cursor string }
		PageInfo   struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
	}
	vars := map[string]any{"order": order}
	size := "first"
	if backward {
		size = "last"
	}
	vars[size] = pageSize
	var seen []string
	for pages := 1; ; pages++ {
		var out map[string]page
		e.must(token, query, vars, &out)
		p := out[field]
		if p.TotalCount != n {
			t.Fatalf("totalCount %d, want %d", p.TotalCount, n)
		}
		if k := len(p.Nodes); k == 0 && (p.PageInfo.StartCursor != nil || p.PageInfo.EndCursor != nil) ||
			k > 0 && (*p.PageInfo.StartCursor != p.Edges[0].Cursor || *p.PageInfo.EndCursor != p.Edges[k-1].Cursor) {
			t.Fatalf("page %d: cursors %v, %v of edges %v", pages, p.PageInfo.StartCursor, p.PageInfo.EndCursor, p.Edges)
		}
		var ids []string
		for _, x := range p.Nodes {
			ids = append(ids, x.ID)
		}
		behind, ahead := p.PageInfo.HasPreviousPage, p.PageInfo.HasNextPage
		if backward {
			behind, ahead = ahead, behind
		}
		if behind != (len(seen) > 0) {
			t.Fatalf("page %d (%s): items seen on the other side %v, want %v", pages, size, behind, len(seen) > 0)
		}
		if backward {
			seen = append(ids, seen...)
		} else {
			seen = append(seen, ids...)
		}
		if ahead != (len(seen) < n) {
			t.Fatalf("page %d (%s): more to come %v with %d of %d seen", pages, size, ahead, len(seen), n)
		}
		if !ahead {
			return seen
		}
		if backward {
			vars["before"] = *p.PageInfo.StartCursor
		} else {
			vars["after"] = *p.PageInfo.EndCursor
		}
	}
}

// connection is a list under test: its field, its order type and the
// order whose sequence is the creation order's reverse (its default), and
// what makes its items.
type connection struct {
	field, orderType, reverseOrder, creationOrder string
	// maker prepares e and returns what makes an item named name (its ID
	// returned) as token.
	maker func(e *env) (token string, add func(name string) string)
}

// TestConnections pages forward and backward, in two orders, through every
// Relay connection holding 0, 1, a page's and a page and one items: each
// way yields every item once, in the list's order, with the page info
// Relay asks for.
func TestConnections(t *testing.T) {
	t.Parallel()
	operator := func(mk func(e *env, name string) string) func(e *env) (string, func(string) string) {
		return func(e *env) (string, func(string) string) {
			return e.operator, func(name string) string { return mk(e, name) }
		}
	}
	// The catalog lists sort by name by default: items are created in the
	// reverse of their names' order.
	catalog := func(field string, mk func(e *env, name string) string) connection {
		return connection{field, "CatalogOrder", "NAME", "OLDEST_FIRST", operator(mk)}
	}
	created := func(field string, maker func(e *env) (string, func(string) string)) connection {
		return connection{field, "CreatedOrder", "NEWEST_FIRST", "OLDEST_FIRST", maker}
	}
	lists := []connection{
		catalog("tenantsConnection", func(e *env, name string) string { id, _ := e.tenant(name); return id }),
		catalog("poolsConnection", func(e *env, name string) string { return e.pool(name, "vps-host", nil) }),
		catalog("flavorsConnection", func(e *env, name string) string { return e.flavor(name, 1, 512) }),
		catalog("imagesConnection", func(e *env, name string) string { return e.image(name, "PUBLIC", nil, true) }),
		{"hostsConnection", "CatalogOrder", "NAME", "OLDEST_FIRST", func(e *env) (string, func(string) string) {
			pool := e.pool("hosts", "vps-host", nil)
			return e.operator, func(name string) string {
				return e.id(e.operator, `mutation($p: ID!, $n: String!) { createHost(input: {poolId: $p, name: $n}) { host { id } } }`,
					map[string]any{"p": pool, "n": name}, "createHost", "host", "id")
			}
		}},
		catalog("providerAccountsConnection", func(e *env, name string) string {
			return e.id(e.operator, createAccount, map[string]any{"in": map[string]any{"name": name, "provider": "HETZNER", "credentials": "token"}},
				"createProviderAccount", "providerAccount", "id")
		}),
		created("instances", func(e *env) (string, func(string) string) {
			w := e.world("alpha")
			return w.member, func(name string) string {
				return e.id(w.member, createInstance, map[string]any{"in": w.input(name)}, "createInstance", "instance", "id")
			}
		}),
		created("sandboxTemplates", func(e *env) (string, func(string) string) {
			w := e.world("alpha")
			return w.member, func(name string) string { return e.template(w, name, nil).ID }
		}),
		created("sandboxes", func(e *env) (string, func(string) string) {
			w := e.world("alpha")
			tmpl := e.template(w, "py", nil).ID
			return w.member, func(string) string { return e.sandbox(w.member, map[string]any{"templateId": tmpl}).ID }
		}),
		created("sandboxSnapshots", func(e *env) (string, func(string) string) {
			w := e.snapshotWorld("alpha")
			sbx := e.running(w)
			return w.member, func(name string) string { return e.snapshot(w.member, sbx.ID, name).ID }
		}),
	}
	for _, l := range lists {
		for _, n := range []int{0, 1, pageSize, pageSize + 1} {
			t.Run(fmt.Sprintf("%s of %d", l.field, n), func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				token, add := l.maker(e)
				var made []string
				for i := range n {
					made = append(made, add(fmt.Sprintf("item-%02d", n-i)))
				}
				reverse := slices.Clone(made)
				slices.Reverse(reverse)
				var empty map[string]struct {
					Nodes    []struct{ ID string }
					PageInfo struct{ HasNextPage bool }
				}
				e.must(token, `{ `+l.field+`(first: 0) { nodes { id } pageInfo { hasNextPage } } }`, nil, &empty)
				if p := empty[l.field]; len(p.Nodes) != 0 || p.PageInfo.HasNextPage != (n > 0) {
					t.Errorf("first: 0 gave %d items, more to come %v", len(p.Nodes), p.PageInfo.HasNextPage)
				}
				for _, c := range []struct {
					order    string
					backward bool
					want     []string
				}{
					{l.reverseOrder, false, reverse}, {l.reverseOrder, true, reverse},
					{l.creationOrder, false, made}, {l.creationOrder, true, made},
				} {
					if got := walk(t, e, token, l.field, l.orderType, c.order, c.backward, n); !slices.Equal(got, c.want) {
						t.Errorf("%s backward=%v: %v, want %v", c.order, c.backward, got, c.want)
					}
				}
			})
		}
	}
	t.Run("bad arguments are refused with their field", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		for _, field := range []string{"flavorsConnection", "instances"} {
			for _, c := range []struct{ args, field string }{
				{"first: 101", "first"}, {"last: -1", "last"}, {"first: 1, last: 1", "last"},
				{`after: "nope"`, "after"}, {`before: "eyJuIjoiIn0"`, "before"},
			} {
				r := e.do(e.operator, `{ `+field+`(`+c.args+`) { totalCount } }`, nil)
				if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != c.field {
					t.Errorf("%s(%s): %+v", field, c.args, r.Errors)
				}
			}
		}
	})
}

// TestAPITokensConnection: operators list every token, revoked ones too,
// with its tenant; a member may not.
func TestAPITokensConnection(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tenant, member := e.tenant("acme") // makes the token acme-member
	ci := e.id(e.operator, `mutation($t: ID) { createApiToken(input: {name: "acme-ci", tenantId: $t}) { apiToken { id } } }`,
		map[string]any{"t": tenant}, "createApiToken", "apiToken", "id")
	e.must(e.operator, `mutation($id: ID!) { revokeApiToken(input: {id: $id}) { apiToken { id } } }`, map[string]any{"id": ci}, nil)
	var out struct {
		ApiTokensConnection struct {
			TotalCount int
			Nodes      []struct {
				Name, Role string
				Tenant     *struct{ ID string }
				RevokedAt  *string
			}
		}
	}
	e.must(e.operator, `{ apiTokensConnection(orderBy: NAME) { totalCount nodes { name role tenant { id } revokedAt } } }`, nil, &out)
	got := out.ApiTokensConnection
	var names []string
	for _, n := range got.Nodes {
		names = append(names, n.Name)
	}
	if got.TotalCount != 3 || !slices.Equal(names, []string{"acme-ci", "acme-member", "test-operator"}) {
		t.Fatalf("tokens %d: %v", got.TotalCount, names)
	}
	if ci := got.Nodes[0]; ci.Tenant == nil || ci.Tenant.ID != tenant || ci.RevokedAt == nil || ci.Role != "MEMBER" {
		t.Errorf("acme-ci: %+v", ci)
	}
	if op := got.Nodes[2]; op.Tenant != nil || op.Role != "OPERATOR" || op.RevokedAt != nil {
		t.Errorf("test-operator: %+v", op)
	}
	if r := e.do(member, `{ apiTokensConnection { totalCount } }`, nil); r.code() != "FORBIDDEN" {
		t.Errorf("a member: %+v", r.Errors)
	}
	// A deleted tenant's tokens stay listed, with it.
	if _, err := e.db.Exec(context.Background(), "UPDATE tenants SET deleted_at = now()"); err != nil {
		t.Fatal(err)
	}
	e.must(e.operator, `{ apiTokensConnection(orderBy: NAME) { totalCount nodes { name role tenant { id } revokedAt } } }`, nil, &out)
	if n := out.ApiTokensConnection.Nodes; len(n) != 3 || n[0].Tenant == nil || n[0].Tenant.ID != tenant {
		t.Errorf("after its tenant was deleted: %+v", n)
	}
}
