package graph_test

import (
	"testing"
)

// TestDeleteTenantSandboxes: deleting a tenant ends its sandboxes (each
// with its DELETED event), deletes its templates, and asks for every
// instance of theirs, warm ones too, to be deleted, in its transaction.
// Another tenant's sandbox of its own template is left alone.
func TestDeleteTenantSandboxes(t *testing.T) {
	t.Parallel()
	e, w, tpl := setupSandboxes(t)
	e.must(w.member, updateTemplate, map[string]any{"in": map[string]any{"id": tpl.ID, "warmCount": 3}}, nil)
	e.warm(tpl.ID, 3)
	warm := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	cold := e.sandbox(w.member, map[string]any{"templateId": tpl.ID, "env": []map[string]any{{"name": "OWN", "value": "x"}}})
	e.step(cold.Instance.ID, "RUNNING", "")
	other := e.world("beta")
	kept := e.sandbox(other.member, map[string]any{"templateId": e.template(other, "py", nil).ID})
	if warm.StartedFrom != "WARM" || cold.StartedFrom != "COLD" {
		t.Fatalf("started from %s and %s", warm.StartedFrom, cold.StartedFrom)
	}

	e.must(e.operator, `mutation($t: ID!) { deleteTenant(input: {id: $t}) { tenant { id } } }`, map[string]any{"t": w.tenant}, nil)

	for _, s := range []sandboxView{warm, cold} {
		var out struct{ Sandbox sandboxView }
		e.must(e.operator, `query($id: ID!) { sandbox(id: $id) { `+sandboxFields+` } }`, map[string]any{"id": s.ID}, &out)
		evs := e.history(e.operator, s.ID)
		last := evs[len(evs)-1]
		if out.Sandbox.State != "DELETED" || out.Sandbox.EndedAt == nil || out.Sandbox.Instance.DesiredState != "DELETED" ||
			last.Type != "DELETED" || last.Reason != "tenant deleted" {
			t.Errorf("%s after its tenant's deletion: %+v, last event %+v", s.ID, out.Sandbox, last)
		}
	}
	if r := e.do(e.operator, `query($id: ID!) { sandboxTemplate(id: $id) { id } }`, map[string]any{"id": tpl.ID}); r.code() != "NOT_FOUND" {
		t.Errorf("the tenant's template: %+v", r.Errors)
	}
	tenant := decode(t, "tnt", w.tenant)
	if n := e.count("instances", "(tenant_id = $1 OR warm_template_id = $2) AND desired_state <> 'DELETED'", tenant, decode(t, "sbt", tpl.ID)); n != 0 {
		t.Errorf("%d instances of the tenant are not to be deleted", n)
	}
	if n := e.count("sandbox_templates", "tenant_id = $1 AND (deleted_at IS NULL OR warm_count > 0)", tenant); n != 0 {
		t.Errorf("%d templates of the tenant live on", n)
	}
	var out struct{ Sandbox sandboxView }
	e.must(e.operator, `query($id: ID!) { sandbox(id: $id) { `+sandboxFields+` } }`, map[string]any{"id": kept.ID}, &out)
	if out.Sandbox.EndedAt != nil || out.Sandbox.Instance.DesiredState != "RUNNING" {
		t.Errorf("another tenant's sandbox: %+v", out.Sandbox)
	}
}
