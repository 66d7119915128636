package graph_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/better-compute/vps/ids"
)

// TestHostJoinTokens: createHost returns a one-time join token and the
// command that uses it, with or without a bearer credential;
// createHostJoinToken gives another and revokeHostCertificates revokes the
// host's certificates; both are for operators only, and neither a token nor
// its hash reaches the audit log.
func TestHostJoinTokens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, member := e.tenant("acme")
	pool := e.pool("fra1", "vps-host", nil)
	type payload struct {
		Credential  *string
		JoinToken   string
		JoinCommand *string
		Host        struct {
			ID                          string
			Certified, BearerCredential bool
			CertValidBefore             *string
		}
	}
	command := regexp.MustCompile(`^better-compute host --server ` + regexp.QuoteMeta(testHostURL) + ` --join-token (bcj_\S+) --ca-sha256 [0-9a-f]{64}$`)
	var certOnly, both struct{ CreateHost payload }
	const create = `mutation($p: ID!, $n: String!, $b: Boolean) { createHost(input: {poolId: $p, name: $n, bearerCredential: $b}) {
		credential joinToken joinCommand host { id certified certValidBefore bearerCredential } } }`
	e.must(e.operator, create, map[string]any{"p": pool, "n": "hv-1", "b": false}, &certOnly)
	e.must(e.operator, create, map[string]any{"p": pool, "n": "hv-2"}, &both)
	var tokens []string

	t.Run("createHost", func(t *testing.T) {
		p := certOnly.CreateHost
		if p.Credential != nil || p.JoinCommand == nil || p.Host.Certified || p.Host.CertValidBefore != nil || p.Host.BearerCredential {
			t.Fatalf("without a bearer credential: %+v", p)
		}
		if m := command.FindStringSubmatch(*p.JoinCommand); m == nil || m[1] != p.JoinToken {
			t.Fatalf("join command %q, token %q", *p.JoinCommand, p.JoinToken)
		}
		if e.count("hosts", "name = 'hv-1' AND credential_hash IS NULL") != 1 {
			t.Fatal("hv-1 has a bearer credential")
		}
		if p := both.CreateHost; p.Credential == nil || !strings.HasPrefix(*p.Credential, "bch_") || !strings.HasPrefix(p.JoinToken, "bcj_") || !p.Host.BearerCredential {
			t.Fatalf("with a bearer credential: %+v", p)
		}
		tokens = append(tokens, p.JoinToken, both.CreateHost.JoinToken)
	})
	t.Run("createHostJoinToken", func(t *testing.T) {
		var out struct{ CreateHostJoinToken payload }
		e.must(e.operator, `mutation($h: ID!) { createHostJoinToken(input: {hostId: $h}) { credential joinToken joinCommand } }`,
			map[string]any{"h": certOnly.CreateHost.Host.ID}, &out)
		p := out.CreateHostJoinToken
		if p.Credential != nil || p.JoinToken == certOnly.CreateHost.JoinToken || p.JoinCommand == nil || !command.MatchString(*p.JoinCommand) {
			t.Fatalf("a new join token: %+v", p)
		}
		tokens = append(tokens, p.JoinToken)
		if n := e.count("host_join_tokens", "used_at IS NULL AND expires_at > now() + interval '59 minutes'"); n != 3 {
			t.Fatalf("%d live join tokens, want 3 for an hour", n)
		}
	})
	t.Run("revokeHostCertificates", func(t *testing.T) {
		var out struct {
			RevokeHostCertificates struct{ Host struct{ Certified bool } }
		}
		e.must(e.operator, `mutation($h: ID!) { revokeHostCertificates(input: {hostId: $h}) { host { certified } } }`,
			map[string]any{"h": certOnly.CreateHost.Host.ID}, &out)
		if out.RevokeHostCertificates.Host.Certified {
			t.Fatal("certified after its certificates were revoked")
		}
		if e.count("audit_events", "action = 'host.revokeCertificates' AND outcome = 'success'") != 1 {
			t.Fatal("revocation not audited")
		}
	})
	t.Run("operators only, and bad IDs", func(t *testing.T) {
		for _, tc := range []struct{ token, mutation, host, code string }{
			{member, "createHostJoinToken", certOnly.CreateHost.Host.ID, "FORBIDDEN"},
			{member, "revokeHostCertificates", certOnly.CreateHost.Host.ID, "FORBIDDEN"},
			{e.operator, "createHostJoinToken", "pool_x", "INVALID_INPUT"},
			{e.operator, "revokeHostCertificates", "host_00000000000000000000000000", "NOT_FOUND"},
		} {
			r := e.do(tc.token, `mutation($h: ID!) { `+tc.mutation+`(input: {hostId: $h}) { host { id } } }`, map[string]any{"h": tc.host})
			if r.code() != tc.code {
				t.Errorf("%s of %s: %+v, want %s", tc.mutation, tc.host, r.Errors, tc.code)
			}
		}
	})
	t.Run("no token in the audit log", func(t *testing.T) {
		for _, tok := range tokens {
			if n := e.count("audit_events", "position($1 in details::text) > 0", tok); n != 0 {
				t.Fatalf("the audit log holds join token %s", tok)
			}
		}
		if n := e.count("audit_events", "details::text LIKE '%bcj_%'"); n != 0 {
			t.Fatalf("%d audit events hold a join token", n)
		}
	})
}

// TestDeleteHost: a host that holds an instance is not deleted, and says
// so; once what it held is deleted, the host goes with every record of it
// (its released allocation, its certificates), and its name may be given
// again.
func TestDeleteHost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	const create = `mutation($p: ID!) { createHost(input: {poolId: $p, name: "hv-1", bearerCredential: false}) { host { id } } }`
	host := e.id(e.operator, create, map[string]any{"p": w.pool}, "createHost", "host", "id")
	inst := e.id(w.member, createInstance, map[string]any{"in": w.input("vm")}, "createInstance", "instance", "id")
	hostID, instID := decodeTB(t, ids.Host, host), decodeTB(t, ids.Instance, inst)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.db.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO allocations (id, host_id, tenant_id, instance_id, vcpus, memory_mb, disk_gb)
		SELECT gen_random_uuid(), $2, tenant_id, id, vcpus, memory_mb, disk_gb FROM instances WHERE id = $1`, instID, hostID)
	exec("UPDATE instances SET state = 'RUNNING', host_id = $1", hostID)
	const del = `mutation($h: ID!) { deleteHost(input: {hostId: $h}) { host { id name } } }`

	r := e.do(e.operator, del, map[string]any{"h": host})
	if r.code() != "FAILED_PRECONDITION" || !strings.Contains(r.Errors[0].Message, "holds 1 instances") {
		t.Fatalf("deleting a host that holds an instance: %+v", r.Errors)
	}
	if r := e.do(w.member, del, map[string]any{"h": host}); r.code() != "FORBIDDEN" && r.code() != "NOT_FOUND" {
		t.Fatalf("a member: %+v", r.Errors)
	}
	exec("UPDATE instances SET state = 'DELETED'")
	exec("UPDATE allocations SET released_at = now()")
	// What only records it: an ended command a deleted instance still
	// names, and a point of its stats.
	exec(`INSERT INTO host_commands (id, host_id, kind, lane, payload, deadline, state)
		VALUES (gen_random_uuid(), $1, 'instance.reboot', 'interactive', '{}', now(), 'SUCCEEDED')`, hostID)
	exec("UPDATE instances SET reboot_command_id = (SELECT id FROM host_commands)")
	exec("INSERT INTO host_stats (host_id, at, memory_bytes, instances) VALUES ($1, now(), 0, 0)", hostID)
	e.must(e.operator, del, map[string]any{"h": host}, nil)
	if r := e.do(e.operator, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": host}); r.code() != "NOT_FOUND" {
		t.Fatalf("the deleted host: %+v", r.Errors)
	}
	for table, where := range map[string]string{"hosts": "true", "allocations": "true", "host_join_tokens": "true", "host_commands": "true",
		"host_stats": "true", "instances": "host_id IS NOT NULL OR reboot_command_id IS NOT NULL"} {
		if n := e.count(table, where); n != 0 {
			t.Errorf("%d rows of %s remain", n, table)
		}
	}
	if n := e.count("audit_events", "action = 'host.delete' AND outcome = 'success'"); n != 1 {
		t.Errorf("%d host.delete audited", n)
	}
	e.must(e.operator, create, map[string]any{"p": w.pool}, nil) // the name is free again
}
