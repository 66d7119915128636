package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// tenantLive says, for each table with a tenant_id column, what a live row
// of a tenant ($1) is: one that still holds, shows or costs something.
// Every such table must be named here or in tenantHistory; a table added
// later fails TestTenantDeleted until its author says which.
var tenantLive = map[string]string{
	"allocations": "released_at IS NULL",
	// What a tenant's live allocations hold of a host; a row of nothing
	// stays.
	"host_usage": "allocations > 0",
	// What a tenant's live instances hold against its quota; a row of
	// nothing stays.
	"tenant_usage": "instances > 0",
	// An instance is gone when it is DELETED, out of its host's NodeSpec
	// and holds nothing.
	"instances": `state <> 'DELETED' OR spec_power IS NOT NULL
		OR EXISTS (SELECT 1 FROM allocations a WHERE a.instance_id = instances.id AND a.released_at IS NULL)
		OR EXISTS (SELECT 1 FROM ip_leases l WHERE l.instance_id = instances.id AND l.released_at IS NULL)
		OR EXISTS (SELECT 1 FROM device_claims d WHERE d.instance_id = instances.id AND d.released_at IS NULL)`,
	"images":            "deleted_at IS NULL",
	"principals":        "EXISTS (SELECT 1 FROM api_tokens k WHERE k.principal_id = principals.id AND k.revoked_at IS NULL)",
	"provider_accounts": "deleted_at IS NULL",
	"quotas":            "true",
	// A snapshot is gone when deleted and its file purged.
	"sandbox_snapshots": "deleted_at IS NULL OR NOT purged",
	"sandbox_templates": "deleted_at IS NULL",
	"sandboxes":         "ended_as IS NULL",
	// Pools are the operator's and have no deletion: one dedicated to the
	// tenant stays, and is live while it runs an instance.
	"pools": "EXISTS (SELECT 1 FROM instances i WHERE i.pool_id = pools.id AND i.state <> 'DELETED')",
}

// tenantHistory are the tables with a tenant_id column whose rows the
// design keeps after their tenant, as history: the audit trail, each
// sandbox's events (which, like the audit trail, nothing deletes yet), and
// what billing reads: the instances' state history and the usage metered
// from it, which outlive a tenant until it is billed.
var tenantHistory = map[string]bool{"audit_events": true, "sandbox_events": true, "instance_state_history": true, "usage_records": true}

// TestTenantDeleted: a tenant with instances on hosts, an instance in a
// provider pool of its own account, sandboxes with warm instances,
// templates, a snapshot, an image, a quota and two tokens is deleted. At
// once its tokens are refused (401) and it is NOT_FOUND; within a minute
// no table with a tenant_id column (listed from information_schema) has a
// live row of it, no server of it is left at the provider, no domain of
// it on a host, no snapshot file; a bystander tenant keeps its instance.
func TestTenantDeleted(t *testing.T) {
	t.Parallel()
	cl := hetznerCloud(t)
	var taps []*reportTap
	c := sandboxCluster(t, options{hosts: 2, reconcilers: 1, hostVcpus: 16, reconcileArgs: providerArgs,
		hostServer: func(_ int, url string) string {
			tap := tapHost(t, url)
			taps = append(taps, tap)
			return tap.url
		}})
	doomed, member := c.tenant, c.member
	second := c.must(c.operator, `mutation($t: ID) { createApiToken(input: {name: "ci", tenantId: $t}) { token } }`, map[string]any{"t": doomed}, "createApiToken", "token")
	c.must(c.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 20}) { tenant { id } } }`, map[string]any{"t": doomed})
	c.must(c.operator, `mutation($t: ID!) { registerImage(input: {name: "own", sourceUrl: "file:///images/own.qcow2", sha256: "`+strings.Repeat("e", 64)+
		`", format: QCOW2, visibility: TENANT, tenantId: $t}) { image { id } } }`, map[string]any{"t": doomed})

	// On the hosts: two instances, a sandbox with a snapshot, a template
	// keeping two warm instances.
	c.create("web-1", "RUNNING")
	c.create("web-2", "STOPPED")
	tmpl := c.sandboxTemplate("py", map[string]any{"warmCount": 2})
	sbx := c.createSandbox(tmpl, nil)
	testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(sbx.id) == "RUNNING" })
	snap := c.takeSnapshot(sbx.id, "base")
	if s := c.settledSnapshot(snap, 30*time.Second); s.state != "READY" {
		t.Fatalf("snapshot %+v", s)
	}
	snapHost := c.hostOf(sbx.instance)
	testenv.Eventually(t, 30*time.Second, "2 warm instances PAUSED", func() bool { return c.warm(tmpl, "PAUSED", true) == 2 })

	// A bystander's instance, on the same hosts.
	hostedPool, hostedFlavor, hostedImage := c.pool, c.flavor, c.image
	_, bystander := c.addTenant("bystander")
	kept := c.must(bystander, `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`,
		map[string]any{"in": map[string]any{"poolId": hostedPool, "flavorId": hostedFlavor, "imageId": hostedImage, "name": "kept", "sshKeys": []string{sshKey}}},
		"createInstance", "instance", "id")

	// At the provider, on the tenant's own account.
	c.providerPool(cl, "cloud", cl.credentials)
	c.cloudCatalog(cl)
	c.create("cloud-1", "RUNNING")
	c.settle(60 * time.Second)
	if n := len(cl.ours()); n != 1 {
		t.Fatalf("%d servers at the provider before, want 1", n)
	}

	c.must(c.operator, `mutation($t: ID!) { deleteTenant(input: {id: $t}) { tenant { id } } }`, map[string]any{"t": doomed})

	for _, token := range []string{member, second} {
		if code := graphqlStatus(t, c.url, token); code != http.StatusUnauthorized {
			t.Errorf("a token of the deleted tenant answered %d, want 401", code)
		}
	}
	for _, gone := range []struct{ what, query, id string }{
		{"its template", `query($id: ID!) { sandboxTemplate(id: $id) { id } }`, tmpl},
		{"its snapshot", `query($id: ID!) { sandboxSnapshot(id: $id) { id } }`, snap},
	} {
		if _, errs := c.gql(c.operator, gone.query, map[string]any{"id": gone.id}); len(errs) != 1 || errs[0]["extensions"].(map[string]any)["code"] != "NOT_FOUND" {
			t.Errorf("%s, read by an operator at once: %v, want NOT_FOUND", gone.what, errs)
		}
	}
	if data, _ := c.gql(c.operator, `{ tenants { id } }`, nil); strings.Contains(fmt.Sprint(data), doomed) {
		t.Errorf("the deleted tenant is still listed: %v", data)
	}

	testenv.Within(60*time.Second, func() bool { return len(liveOfTenant(t, c, doomed)) == 0 && len(cl.ours()) == 0 })
	for _, left := range liveOfTenant(t, c, doomed) {
		t.Errorf("left of the deleted tenant: %s", left)
	}
	if servers := cl.ours(); len(servers) != 0 {
		t.Errorf("servers left at the provider: %v", servers)
	}
	if storeHas(t, c.hostDir(snapHost), snap) {
		t.Errorf("the snapshot's file is still on %s", snapHost)
	}
	c.checkDomains(taps)
	if state := c.must(bystander, `query($id: ID!) { node(id: $id) { ... on Instance { state } } }`, map[string]any{"id": kept}, "node", "state"); state != "RUNNING" {
		t.Errorf("the bystander's instance is %s, want RUNNING", state)
	}
}

// liveOfTenant lists, for each table with a tenant_id column, how many live
// rows of tenant it has (tenantLive), and fails the test for a table
// neither tenantLive nor tenantHistory names.
func liveOfTenant(t *testing.T, c *cluster, tenant string) []string {
	t.Helper()
	rows, err := c.db.Query(context.Background(), `SELECT c.table_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND c.column_name = 'tenant_id' AND t.table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	id := uuidOf(t, tenant)
	var left []string
	for _, table := range tables {
		live, ok := tenantLive[table]
		if tenantHistory[table] {
			continue
		}
		if !ok {
			t.Fatalf("table %s has a tenant_id column: say in tenantLive what a live row of it is, or in tenantHistory that it is history", table)
		}
		if n := c.count(fmt.Sprintf("%s WHERE tenant_id = $1 AND (%s)", table, live), id); n > 0 {
			left = append(left, fmt.Sprintf("%d live rows in %s", n, table))
		}
	}
	return left
}

// graphqlStatus is the HTTP status of a query made with token.
func graphqlStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader([]byte(`{"query":"{ viewer { principal { id } } }"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
