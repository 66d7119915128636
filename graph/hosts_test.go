package graph_test

import (
	"regexp"
	"strings"
	"testing"
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
