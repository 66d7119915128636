package graph_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	b := e.world("beta")
	bInstance := e.id(b.member, createInstance, map[string]any{"in": b.input("secret")}, "createInstance", "instance", "id")
	e.must(b.member, `mutation($id: ID!) { stopInstance(input: {id: $id}) { instance { id } } }`, map[string]any{"id": bInstance}, nil)
	var events struct {
		AuditEvents struct{ Nodes []struct{ ID string } }
	}
	e.must(b.member, `{ auditEvents(first: 1) { nodes { id } } }`, nil, &events)
	bEvent := events.AuditEvents.Nodes[0].ID
	missing := "ins_" + strings.Repeat("0", 26)

	t.Run("queries on another tenant's objects are NOT_FOUND", func(t *testing.T) {
		for _, q := range []struct{ query, id string }{
			{`query($id: ID!) { instance(id: $id) { id } }`, bInstance},
			{`query($id: ID!) { node(id: $id) { id } }`, bInstance},
			{`query($id: ID!) { node(id: $id) { id } }`, b.pool},
			{`query($id: ID!) { node(id: $id) { id } }`, b.image},
			{`query($id: ID!) { node(id: $id) { id } }`, b.tenant},
			{`query($id: ID!) { node(id: $id) { id } }`, bEvent},
		} {
			if r := e.do(a.member, q.query, map[string]any{"id": q.id}); r.code() != "NOT_FOUND" {
				t.Errorf("%s on %s: %+v", q.query, q.id, r.Errors)
			}
		}
	})
	t.Run("node leaks nothing", func(t *testing.T) {
		foreign := e.do(a.member, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": bInstance})
		absent := e.do(a.member, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": missing})
		f, _ := json.Marshal(foreign)
		m, _ := json.Marshal(absent)
		if string(f) != string(m) {
			t.Fatalf("foreign object:\n%s\nabsent object:\n%s", f, m)
		}
	})
	t.Run("mutations on another tenant's instance are NOT_FOUND and change nothing", func(t *testing.T) {
		for _, m := range []string{"startInstance", "stopInstance", "rebootInstance", "deleteInstance"} {
			r := e.do(a.member, `mutation($id: ID!) { `+m+`(input: {id: $id}) { instance { id } } }`, map[string]any{"id": bInstance})
			if r.code() != "NOT_FOUND" {
				t.Errorf("%s: %+v", m, r.Errors)
			}
		}
		if n := e.count("instances", "desired_state = 'STOPPED' AND version = 2"); n != 1 {
			t.Fatal("the instance changed")
		}
		if n := e.count("audit_events", "outcome = 'failure' AND error_code = 'NOT_FOUND' AND tenant_id IS DISTINCT FROM (SELECT tenant_id FROM instances LIMIT 1)"); n != 4 {
			t.Fatalf("failed attempts audited under the caller's tenant = %d, want 4", n)
		}
	})
	t.Run("lists show only the tenant's own", func(t *testing.T) {
		var out struct {
			Instances struct {
				TotalCount int
				Nodes      []struct{ ID string }
			}
			Pools       []struct{ ID string }
			Images      []struct{ ID string }
			AuditEvents struct{ Nodes []struct{ TenantID string } }
		}
		e.must(a.member, `{ instances { totalCount nodes { id } } pools { id } images { id } auditEvents(first: 100) { nodes { tenantId } } }`, nil, &out)
		if out.Instances.TotalCount != 0 || len(out.Instances.Nodes) != 0 {
			t.Errorf("member A sees instances %+v", out.Instances)
		}
		for _, p := range out.Pools {
			if p.ID == b.pool {
				t.Error("member A sees B's pool")
			}
		}
		for _, i := range out.Images {
			if i.ID == b.image {
				t.Error("member A sees B's image")
			}
		}
		for _, ev := range out.AuditEvents.Nodes {
			if ev.TenantID != a.tenant {
				t.Errorf("member A sees an audit event of %q", ev.TenantID)
			}
		}
	})
	t.Run("members cannot call operator operations", func(t *testing.T) {
		ops := []string{
			`mutation { createTenant(input: {name: "x"}) { tenant { id } } }`,
			`mutation($t: ID!) { deleteTenant(input: {id: $t}) { tenant { id } } }`,
			`mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 100}) { tenant { id } } }`,
			`mutation($t: ID) { createApiToken(input: {name: "x", tenantId: $t}) { token } }`,
			`mutation { createPool(input: {name: "x", class: "vps-host"}) { pool { id } } }`,
			`mutation($p: ID!) { createIpPool(input: {poolId: $p, cidr: "10.0.0.0/24", gateway: "10.0.0.1", rangeStart: "10.0.0.10", rangeEnd: "10.0.0.20"}) { pool { id } } }`,
			`mutation($p: ID!) { createHost(input: {poolId: $p, name: "x"}) { credential } }`,
			`mutation { createFlavor(input: {name: "x", vcpus: 1, memoryMb: 1, diskGb: 1}) { flavor { id } } }`,
			`mutation { registerImage(input: {name: "x", sourceUrl: "https://x/y", sha256: "` + sha + `", format: RAW, visibility: PUBLIC}) { image { id } } }`,
			`{ hosts { id } }`,
			`{ tenants { id } }`,
		}
		for _, op := range ops {
			r := e.do(a.member, op, map[string]any{"t": a.tenant, "p": a.pool})
			if r.code() != "FORBIDDEN" {
				t.Errorf("%s: %+v", op, r.Errors)
			}
		}
		if r := e.do(a.member, `mutation { revokeApiToken(input: {id: "tok_`+strings.Repeat("0", 26)+`"}) { apiToken { id } } }`, nil); r.code() != "FORBIDDEN" {
			t.Errorf("revokeApiToken: %+v", r.Errors)
		}
	})
	t.Run("members never see hosts", func(t *testing.T) {
		var out struct {
			Instance struct{ Host *struct{ ID string } }
		}
		aInstance := e.id(a.member, createInstance, map[string]any{"in": a.input("mine")}, "createInstance", "instance", "id")
		e.must(a.member, `query($id: ID!) { instance(id: $id) { host { id } } }`, map[string]any{"id": aInstance}, &out)
		if out.Instance.Host != nil {
			t.Fatal("a member saw a host")
		}
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	viewer := `{ viewer { principal { name role } tenant { id } } }`

	t.Run("a member sees its tenant", func(t *testing.T) {
		var out struct {
			Viewer struct {
				Principal struct{ Name, Role string }
				Tenant    struct{ ID string }
			}
		}
		e.must(a.member, viewer, nil, &out)
		if out.Viewer.Principal.Role != "MEMBER" || out.Viewer.Tenant.ID != a.tenant {
			t.Fatalf("viewer = %+v", out.Viewer)
		}
	})
	t.Run("missing and unknown tokens are UNAUTHENTICATED", func(t *testing.T) {
		for _, tok := range []string{"", "bct_unknown"} {
			if r := e.do(tok, viewer, nil); r.code() != "UNAUTHENTICATED" {
				t.Errorf("token %q: %+v", tok, r.Errors)
			}
		}
	})
	t.Run("a revoked token is UNAUTHENTICATED", func(t *testing.T) {
		var out struct {
			CreateApiToken struct {
				Token    string
				ApiToken struct{ ID string }
			}
		}
		e.must(e.operator, `mutation($t: ID) { createApiToken(input: {name: "ci", tenantId: $t}) { token apiToken { id } } }`, map[string]any{"t": a.tenant}, &out)
		tok := out.CreateApiToken.Token
		e.must(tok, viewer, nil, nil)
		var revoked struct {
			RevokeApiToken struct {
				ApiToken struct{ RevokedAt *time.Time }
			}
		}
		e.must(e.operator, `mutation($id: ID!) { revokeApiToken(input: {id: $id}) { apiToken { revokedAt } } }`, map[string]any{"id": out.CreateApiToken.ApiToken.ID}, &revoked)
		if revoked.RevokeApiToken.ApiToken.RevokedAt == nil {
			t.Fatal("revokedAt not set")
		}
		if r := e.do(tok, viewer, nil); r.code() != "UNAUTHENTICATED" {
			t.Fatalf("revoked token: %+v", r.Errors)
		}
	})
	t.Run("an expired token is UNAUTHENTICATED", func(t *testing.T) {
		tok := e.id(e.operator, `mutation($t: ID, $x: DateTime) { createApiToken(input: {name: "short", tenantId: $t, expiresAt: $x}) { token } }`,
			map[string]any{"t": a.tenant, "x": time.Now().Add(time.Second).Format(time.RFC3339Nano)}, "createApiToken", "token")
		e.must(tok, viewer, nil, nil)
		e.db.Exec(t.Context(), "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'short'")
		if r := e.do(tok, viewer, nil); r.code() != "UNAUTHENTICATED" {
			t.Fatalf("expired token: %+v", r.Errors)
		}
		r := e.do(e.operator, `mutation($x: DateTime) { createApiToken(input: {name: "past", expiresAt: $x}) { token } }`,
			map[string]any{"x": time.Now().Add(-time.Hour).Format(time.RFC3339)})
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "expiresAt" {
			t.Fatalf("past expiry: %+v", r.Errors)
		}
	})
	t.Run("tokens are stored as hashes", func(t *testing.T) {
		if n := e.count("api_tokens", "position(convert_to($1, 'UTF8') in hash) > 0 OR length(hash) <> 32", a.member); n != 0 {
			t.Fatal("a token is stored in the clear")
		}
	})
	t.Run("deleting a tenant ends its tokens and deletes its instances", func(t *testing.T) {
		id := e.id(a.member, createInstance, map[string]any{"in": a.input("doomed")}, "createInstance", "instance", "id")
		outbox := e.count("outbox", "true")
		e.must(e.operator, `mutation($t: ID!) { deleteTenant(input: {id: $t}) { tenant { id } } }`, map[string]any{"t": a.tenant}, nil)
		if r := e.do(a.member, viewer, nil); r.code() != "UNAUTHENTICATED" {
			t.Fatalf("deleted tenant's token: %+v", r.Errors)
		}
		var out struct {
			Instance struct{ DesiredState string }
		}
		e.must(e.operator, `query($id: ID!) { instance(id: $id) { desiredState } }`, map[string]any{"id": id}, &out)
		if out.Instance.DesiredState != "DELETED" {
			t.Fatalf("instance desired state = %s", out.Instance.DesiredState)
		}
		if got := e.count("outbox", "true"); got != outbox+1 {
			t.Fatalf("outbox rows %d → %d, want one more", outbox, got)
		}
	})
}

func TestEveryErrorHasACode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for name, body := range map[string]string{
		"not JSON":          `{bad json`,
		"syntax error":      `{"query":"{ viewer { "}`,
		"unknown field":     `{"query":"{ viewer { bogus } }"}`,
		"bad variable type": `{"query":"query($n: Int) { instances(first: $n) { totalCount } }","variables":{"n":"x"}}`,
		"missing variable":  `{"query":"mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }"}`,
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.operator)
			r := send(t, req)
			if r.code() != "INVALID_INPUT" {
				t.Fatalf("errors = %+v", r.Errors)
			}
		})
	}
	t.Run("not a GraphQL request", func(t *testing.T) {
		req, _ := http.NewRequest("PUT", e.url, strings.NewReader("x"))
		if r := send(t, req); r.code() != "INVALID_INPUT" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
}

func send(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("decode (HTTP %d): %v", resp.StatusCode, err)
	}
	return r
}
