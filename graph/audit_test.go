package graph_test

import "testing"

// TestAuditPrincipalNames: the audit trail says who acted by name; a member
// sees its own tenant's principals by name and an operator acting on its
// tenant as "an operator", while operators see every name.
func TestAuditPrincipalNames(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 10}) { tenant { id } } }`, map[string]any{"t": w.tenant}, nil)
	e.must(w.member, createInstance, map[string]any{"in": w.input("vm-1")}, nil)

	by := func(token, action string) string {
		t.Helper()
		var out struct {
			AuditEvents struct {
				Nodes []struct{ PrincipalName *string }
			}
		}
		e.must(token, `query($a: String) { auditEvents(first: 5, filter: {action: $a}) { nodes { principalName } } }`, map[string]any{"a": action}, &out)
		if len(out.AuditEvents.Nodes) == 0 || out.AuditEvents.Nodes[0].PrincipalName == nil {
			t.Fatalf("%s: no event with a principal: %+v", action, out)
		}
		return *out.AuditEvents.Nodes[0].PrincipalName
	}
	cases := []struct {
		who, token, action, want string
	}{
		{"member, its own action", w.member, "instance.create", "alpha-member"},
		{"member, an operator's action", w.member, "quota.set", "an operator"},
		{"operator, a member's action", e.operator, "instance.create", "alpha-member"},
		{"operator, its own action", e.operator, "quota.set", "test-operator"},
	}
	for _, c := range cases {
		t.Run(c.who, func(t *testing.T) {
			if got := by(c.token, c.action); got != c.want {
				t.Fatalf("principalName = %q, want %q", got, c.want)
			}
		})
	}
}

// TestNullWhereNothingIsSaid: a field whose empty string would mean
// nothing is null instead: a successful attempt's errorCode and the
// stateReason of an instance with no reason to give; a failed attempt
// keeps its code.
func TestNullWhereNothingIsSaid(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	var created struct {
		CreateInstance struct{ Instance struct{ ID string } }
	}
	e.must(w.member, createInstance, map[string]any{"in": w.input("vm-1")}, &created)
	if r := e.do(w.member, createInstance, map[string]any{"in": w.input("vm-1")}); r.code() != "CONFLICT" { // its name is taken
		t.Fatalf("a taken name: %v", r)
	}

	var got struct {
		AuditEvents struct {
			Nodes []struct {
				Outcome   string
				ErrorCode *string
			}
		}
		Node struct{ StateReason *string }
	}
	e.must(w.member, `query($id: ID!) {
		auditEvents(first: 5, filter: {action: "instance.create"}) { nodes { outcome errorCode } }
		node(id: $id) { ... on Instance { stateReason } } }`, map[string]any{"id": created.CreateInstance.Instance.ID}, &got)
	codes := map[string]*string{}
	for _, n := range got.AuditEvents.Nodes {
		codes[n.Outcome] = n.ErrorCode
	}
	if len(codes) != 2 || codes["SUCCESS"] != nil || codes["FAILURE"] == nil || *codes["FAILURE"] != "CONFLICT" {
		t.Errorf("errorCode by outcome = %v: want null on success, CONFLICT on failure", codes)
	}
	if got.Node.StateReason != nil {
		t.Errorf("a new instance's stateReason = %q, want null", *got.Node.StateReason)
	}
}
