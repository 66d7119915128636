package graph_test

import (
	"context"
	"strings"
	"testing"
)

const createAccount = `mutation($in: CreateProviderAccountInput!) { createProviderAccount(input: $in) {
	providerAccount { id name provider settings tenant { id } } } }`

func TestProviderAccounts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	b := e.world("beta")
	const secret = "hcloud-token-5ecr3t-DO-NOT-LEAK"
	proxmox := map[string]any{"endpoint": "https://pve.example.com:8006/api2/json", "node": "pve1", "storage": "local-lvm", "template": 9000}

	var created struct {
		CreateProviderAccount struct {
			ProviderAccount struct {
				ID, Name, Provider string
				Settings           map[string]any
				Tenant             struct{ ID string }
			}
		}
	}
	e.must(a.member, createAccount, map[string]any{"in": map[string]any{"name": "burst", "provider": "HETZNER", "credentials": secret,
		"settings": map[string]any{"location": "fsn1"}}}, &created)
	acct := created.CreateProviderAccount.ProviderAccount
	if !strings.HasPrefix(acct.ID, "pa_") || acct.Provider != "HETZNER" || acct.Tenant.ID != a.tenant || acct.Settings["location"] != "fsn1" {
		t.Fatalf("account = %+v", acct)
	}

	t.Run("credentials never come back, nor go into the audit trail", func(t *testing.T) {
		r := e.do(a.member, `{ providerAccounts { id name provider settings } }`, nil)
		if strings.Contains(string(r.Data), secret) {
			t.Fatal("credentials in a response")
		}
		var sealed []byte
		e.db.QueryRow(context.Background(), "SELECT credentials_sealed FROM provider_accounts").Scan(&sealed)
		if strings.Contains(string(sealed), secret) {
			t.Fatal("credentials stored in the clear")
		}
		if n := e.count("audit_events", "details::text LIKE '%' || $1 || '%'", secret); n != 0 {
			t.Fatal("credentials in the audit trail")
		}
		var schema struct {
			Type struct{ Fields []struct{ Name string } } `json:"__type"`
		}
		e.must(a.member, `{ __type(name: "ProviderAccount") { fields { name } } }`, nil, &schema)
		for _, f := range schema.Type.Fields {
			if strings.Contains(strings.ToLower(f.Name), "credential") {
				t.Fatalf("ProviderAccount exposes %s", f.Name)
			}
		}
	})
	t.Run("bad input", func(t *testing.T) {
		cases := []struct {
			in    map[string]any
			field string
		}{
			{map[string]any{"name": "x", "provider": "PROXMOX", "credentials": "t", "settings": map[string]any{"node": "pve1", "storage": "s", "template": 9000}}, "settings.endpoint"},
			{map[string]any{"name": "x", "provider": "PROXMOX", "credentials": "t", "settings": map[string]any{"endpoint": "https://pve:8006", "storage": "s", "template": 9000}}, "settings.node"},
			{map[string]any{"name": "x", "provider": "PROXMOX", "credentials": "t", "settings": map[string]any{"endpoint": "https://pve:8006", "node": "n", "storage": "s", "template": 5}}, "settings.template"},
			{map[string]any{"name": "x", "provider": "HETZNER", "credentials": "t", "settings": map[string]any{"endpoint": "ftp://x"}}, "settings.endpoint"},
			{map[string]any{"name": "x", "provider": "HETZNER", "credentials": " "}, "credentials"},
			{map[string]any{"name": "", "provider": "HETZNER", "credentials": "t"}, "name"},
		}
		for _, c := range cases {
			if r := e.do(a.member, createAccount, map[string]any{"in": c.in}); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != c.field {
				t.Errorf("%v: %+v", c.in, r.Errors)
			}
		}
		in := map[string]any{"name": "pve", "provider": "PROXMOX", "credentials": "root@pam!ci=uuid", "settings": proxmox}
		e.must(a.member, createAccount, map[string]any{"in": in}, nil)
	})
	t.Run("another tenant's account is NOT_FOUND", func(t *testing.T) {
		if r := e.do(b.member, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": acct.ID}); r.code() != "NOT_FOUND" {
			t.Fatalf("node: %+v", r.Errors)
		}
		if r := e.do(b.member, `mutation($id: ID!) { deleteProviderAccount(input: {id: $id}) { providerAccount { id } } }`, map[string]any{"id": acct.ID}); r.code() != "NOT_FOUND" {
			t.Fatalf("delete: %+v", r.Errors)
		}
		var out struct{ ProviderAccounts []struct{ ID string } }
		e.must(b.member, `{ providerAccounts { id } }`, nil, &out)
		if len(out.ProviderAccounts) != 0 {
			t.Fatalf("member B sees %v", out.ProviderAccounts)
		}
	})
	t.Run("update rotates the credentials and keeps what is left out", func(t *testing.T) {
		const rotated = "hcloud-token-R0TATED-DO-NOT-LEAK"
		update := `mutation($in: UpdateProviderAccountInput!) { updateProviderAccount(input: $in) { providerAccount { id settings } } }`
		var out struct {
			UpdateProviderAccount struct {
				ProviderAccount struct{ Settings map[string]any }
			}
		}
		e.must(a.member, update, map[string]any{"in": map[string]any{"id": acct.ID, "credentials": rotated}}, &out)
		if out.UpdateProviderAccount.ProviderAccount.Settings["location"] != "fsn1" {
			t.Fatalf("settings after a credentials update: %v", out.UpdateProviderAccount.ProviderAccount.Settings)
		}
		var id [16]byte
		var sealed []byte
		e.db.QueryRow(context.Background(), "SELECT id, credentials_sealed FROM provider_accounts WHERE name = 'burst'").Scan(&id, &sealed)
		if open, err := e.sealer.Open(sealed, id[:]); err != nil || string(open) != rotated {
			t.Fatalf("stored credentials open to %q, %v", open, err)
		}
		e.must(a.member, update, map[string]any{"in": map[string]any{"id": acct.ID, "settings": map[string]any{"location": "nbg1"}}}, &out)
		if out.UpdateProviderAccount.ProviderAccount.Settings["location"] != "nbg1" {
			t.Fatalf("settings = %v", out.UpdateProviderAccount.ProviderAccount.Settings)
		}
		e.db.QueryRow(context.Background(), "SELECT credentials_sealed FROM provider_accounts WHERE name = 'burst'").Scan(&sealed)
		if open, _ := e.sealer.Open(sealed, id[:]); string(open) != rotated {
			t.Fatalf("a settings update lost the credentials: %q", open)
		}
		if r := e.do(a.member, update, map[string]any{"in": map[string]any{"id": acct.ID, "credentials": " "}}); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "credentials" {
			t.Fatalf("blank credentials: %+v", r.Errors)
		}
		if r := e.do(b.member, update, map[string]any{"in": map[string]any{"id": acct.ID, "credentials": "x"}}); r.code() != "NOT_FOUND" {
			t.Fatalf("another tenant's update: %+v", r.Errors)
		}
		if n := e.count("audit_events", "action = 'providerAccount.update' AND outcome = 'success'"); n != 2 {
			t.Fatalf("%d update events", n)
		}
		if n := e.count("audit_events", "details::text LIKE '%' || $1 || '%'", rotated); n != 0 {
			t.Fatal("credentials in the audit trail")
		}
	})
	t.Run("delete is refused while instances use it", func(t *testing.T) {
		var id string
		e.db.QueryRow(context.Background(), "SELECT id FROM provider_accounts WHERE name = 'burst'").Scan(&id)
		e.db.Exec(context.Background(), "UPDATE pools SET class = 'provider', runtime = NULL, provider_account_id = $1 WHERE name = 'alpha-pool'", id)
		e.db.Exec(context.Background(), `UPDATE flavors SET provider_types = '{"hetzner": "cx22"}'`)
		e.db.Exec(context.Background(), `UPDATE images SET provider_images = '{"hetzner": "debian-12"}'`)
		e.must(a.member, createInstance, map[string]any{"in": a.input("on-cloud")}, nil)
		del := `mutation($id: ID!) { deleteProviderAccount(input: {id: $id}) { providerAccount { id } } }`
		if r := e.do(a.member, del, map[string]any{"id": acct.ID}); r.code() != "FAILED_PRECONDITION" {
			t.Fatalf("delete in use: %+v", r.Errors)
		}
		e.db.Exec(context.Background(), "UPDATE instances SET state = 'DELETED' WHERE name = 'on-cloud'")
		e.must(a.member, del, map[string]any{"id": acct.ID}, nil)
		if r := e.do(a.member, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": acct.ID}); r.code() != "NOT_FOUND" {
			t.Fatalf("after delete: %+v", r.Errors)
		}
	})
}

// providerPool makes a Hetzner account (of tenant, or shared when nil) and
// a provider pool on it.
func (e *env) providerPool(name string, tenant any) string {
	e.t.Helper()
	acct := e.id(e.operator, createAccount, map[string]any{"in": map[string]any{"name": name + "-account", "provider": "HETZNER", "credentials": "token", "tenantId": tenant}},
		"createProviderAccount", "providerAccount", "id")
	return e.id(e.operator, `mutation($n: String!, $t: ID, $a: ID) { createPool(input: {name: $n, class: "provider", tenantId: $t, providerAccountId: $a}) { pool { id } } }`,
		map[string]any{"n": name, "t": tenant, "a": acct}, "createPool", "pool", "id")
}

// TestProviderPoolAdmission: a provider pool takes only flavors and images
// its provider has a counterpart of.
func TestProviderPoolAdmission(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	pool := e.providerPool("cloud", w.tenant)
	mapped := e.id(e.operator, `mutation { createFlavor(input: {name: "cx22", vcpus: 2, memoryMb: 4096, diskGb: 40, providerServerTypes: {hetzner: "cx22"}}) { flavor { id } } }`,
		nil, "createFlavor", "flavor", "id")
	image := e.id(e.operator, `mutation($t: ID) { registerImage(input: {name: "deb", sourceUrl: "https://x/y", sha256: "`+sha+`", format: QCOW2, visibility: TENANT, tenantId: $t, verified: true, providerImages: {hetzner: "debian-12"}}) { image { id } } }`,
		map[string]any{"t": w.tenant}, "registerImage", "image", "id")

	in := w.input("burst-1")
	in["poolId"] = pool
	for _, c := range []struct{ flavor, image, field string }{
		{w.flavor, image, "flavorId"}, // no Hetzner server type
		{mapped, w.image, "imageId"},  // no Hetzner image
	} {
		in["flavorId"], in["imageId"] = c.flavor, c.image
		if r := e.do(w.member, createInstance, map[string]any{"in": in}); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != c.field {
			t.Errorf("%s: %+v", c.field, r.Errors)
		}
	}
	in["flavorId"], in["imageId"] = mapped, image
	e.must(w.member, createInstance, map[string]any{"in": in}, nil)

	t.Run("pools and accounts go together", func(t *testing.T) {
		if r := e.do(e.operator, `mutation { createPool(input: {name: "bare", class: "provider"}) { pool { id } } }`, nil); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "providerAccountId" {
			t.Errorf("provider pool without an account: %+v", r.Errors)
		}
		var out struct{ ProviderAccounts []struct{ ID string } }
		e.must(e.operator, `{ providerAccounts { id } }`, nil, &out)
		r := e.do(e.operator, `mutation($a: ID) { createPool(input: {name: "hosted", class: "vps-host", providerAccountId: $a}) { pool { id } } }`,
			map[string]any{"a": out.ProviderAccounts[0].ID})
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "providerAccountId" {
			t.Errorf("hosted pool with an account: %+v", r.Errors)
		}
	})
	t.Run("mappings name allowed providers", func(t *testing.T) {
		r := e.do(e.operator, `mutation { createFlavor(input: {name: "odd", vcpus: 1, memoryMb: 1, diskGb: 1, providerServerTypes: {aws: "t3.micro"}}) { flavor { id } } }`, nil)
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "providerServerTypes" {
			t.Errorf("unknown provider: %+v", r.Errors)
		}
	})
}

// TestProviderEndpointPolicy: a member's provider account may name only an
// endpoint the operator allows (the harness allows pve.example.com, as
// BC_PROVIDER_ENDPOINTS would), never a loopback, link-local or private
// address; an operator's shared account skips the list but not the
// address check. Each refusal is INVALID_INPUT on settings.endpoint, on
// create and on update.
func TestProviderEndpointPolicy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	proxmox := func(endpoint string) map[string]any {
		return map[string]any{"endpoint": endpoint, "node": "pve1", "storage": "local-lvm", "template": 9000}
	}
	account := func(endpoint, tenant string) map[string]any {
		in := map[string]any{"name": "pve", "provider": "PROXMOX", "credentials": "root@pam!ci=uuid", "settings": proxmox(endpoint)}
		if tenant != "" {
			in["tenantId"] = tenant
		}
		return map[string]any{"in": in}
	}
	refused := []string{
		"http://127.0.0.1:8006/api2/json",
		"http://169.254.169.254/latest/meta-data",
		"https://10.0.0.5:8006",
		"https://[::1]:8006",
		"https://[fd00::1]:8006",
		"https://0.0.0.0:8006",
		"https://localhost:8006",
		"https://evil.example.net:8006",
		"https://pve.example.com.evil.net:8006",
	}
	for _, endpoint := range refused {
		if r := e.do(a.member, createAccount, account(endpoint, "")); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "settings.endpoint" {
			t.Errorf("a member's account at %s: %+v", endpoint, r.Errors)
		}
		if r := e.do(e.operator, createAccount, account(endpoint, a.tenant)); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "settings.endpoint" {
			t.Errorf("an operator's account for a tenant at %s: %+v", endpoint, r.Errors)
		}
	}
	if r := e.do(a.member, createAccount, map[string]any{"in": map[string]any{"name": "hz", "provider": "HETZNER", "credentials": "t",
		"settings": map[string]any{"endpoint": "http://127.0.0.1:9/v1"}}}); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "settings.endpoint" {
		t.Errorf("a member's Hetzner account on loopback: %+v", r.Errors)
	}
	e.must(a.member, createAccount, map[string]any{"in": map[string]any{"name": "hz", "provider": "HETZNER", "credentials": "t"}}, nil)

	var created struct {
		CreateProviderAccount struct{ ProviderAccount struct{ ID string } }
	}
	e.must(a.member, createAccount, account("https://PVE.example.com:8006/api2/json", ""), &created)
	update := `mutation($in: UpdateProviderAccountInput!) { updateProviderAccount(input: $in) { providerAccount { id } } }`
	for _, endpoint := range refused {
		in := map[string]any{"in": map[string]any{"id": created.CreateProviderAccount.ProviderAccount.ID, "settings": proxmox(endpoint)}}
		if r := e.do(a.member, update, in); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "settings.endpoint" {
			t.Errorf("update to %s: %+v", endpoint, r.Errors)
		}
	}

	t.Run("an operator's shared account skips the list, not the address check", func(t *testing.T) {
		e.must(e.operator, createAccount, account("https://pve.internal.example:8006", ""), nil)
		if r := e.do(e.operator, createAccount, account("http://127.0.0.1:8006", "")); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "settings.endpoint" {
			t.Errorf("a shared account on loopback: %+v", r.Errors)
		}
	})
}
