package e2e

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
)

// sandboxRef is a sandbox as createSandbox answered it.
type sandboxRef struct {
	id, instance, startedFrom string
}

const sandboxFields = `id startedFrom state instance { id }`

// sandboxTemplate makes a template of the cluster's pool, flavor and image
// as the member, with the fields of extra, and returns its ID.
func (c *cluster) sandboxTemplate(name string, extra map[string]any) string {
	c.t.Helper()
	return c.sandboxTemplateAs(c.member, name, extra)
}

// sandboxTemplateAs makes a template as the holder of token; see
// sandboxTemplate.
func (c *cluster) sandboxTemplateAs(token, name string, extra map[string]any) string {
	c.t.Helper()
	in := map[string]any{"name": name, "poolId": c.pool, "flavorId": c.flavor, "imageId": c.image, "sshKeys": []string{sshKey}}
	for k, v := range extra {
		in[k] = v
	}
	return c.must(token, `mutation($in: CreateSandboxTemplateInput!) { createSandboxTemplate(input: $in) { sandboxTemplate { id } } }`,
		map[string]any{"in": in}, "createSandboxTemplate", "sandboxTemplate", "id")
}

// updateTemplate changes a template as the member.
func (c *cluster) updateTemplate(id string, fields map[string]any) {
	c.t.Helper()
	in := map[string]any{"id": id}
	for k, v := range fields {
		in[k] = v
	}
	c.must(c.member, updateTemplateQuery, map[string]any{"in": in})
}

// updateTemplateQuery changes a template: its variable in is an
// UpdateSandboxTemplateInput.
const updateTemplateQuery = `mutation($in: UpdateSandboxTemplateInput!) { updateSandboxTemplate(input: $in) { sandboxTemplate { id } } }`

// createSandboxQuery makes a sandbox: its variable in is a
// CreateSandboxInput; sandboxRefOf reads its answer.
const createSandboxQuery = `mutation($in: CreateSandboxInput!) { createSandbox(input: $in) { sandbox { ` + sandboxFields + ` } } }`

// createSandbox makes a sandbox of template as the member, with the
// fields of extra; its errors fail the test.
func (c *cluster) createSandbox(template string, extra map[string]any) sandboxRef {
	c.t.Helper()
	ref, errs := c.tryCreateSandbox(c.url, template, extra)
	if len(errs) > 0 {
		c.t.Fatalf("createSandbox: %v", errs)
	}
	return ref
}

// tryCreateSandbox makes a sandbox at the serve process at url, safe to
// call from any goroutine.
func (c *cluster) tryCreateSandbox(url, template string, extra map[string]any) (sandboxRef, []map[string]any) {
	in := map[string]any{"templateId": template}
	for k, v := range extra {
		in[k] = v
	}
	data, errs, err := post(url, c.member, createSandboxQuery, map[string]any{"in": in})
	if err != nil {
		return sandboxRef{}, []map[string]any{{"message": err.Error()}}
	}
	if len(errs) > 0 {
		return sandboxRef{}, errs
	}
	return sandboxRefOf(data), nil
}

// sandboxRefOf reads the sandbox of createSandboxQuery's answer.
func sandboxRefOf(data map[string]any) sandboxRef {
	s := data["createSandbox"].(map[string]any)["sandbox"].(map[string]any)
	return sandboxRef{id: s["id"].(string), startedFrom: s["startedFrom"].(string), instance: s["instance"].(map[string]any)["id"].(string)}
}

// sandboxOp runs a mutation taking a sandbox's ID (and more input) as the
// member and returns the errors' codes.
func (c *cluster) sandboxOp(mutation, id string, extra map[string]any) []string {
	_, errs, err := postSandboxOp(c.url, c.member, mutation, id, extra)
	if err != nil {
		return []string{err.Error()}
	}
	var codes []string
	for _, e := range errs {
		code, _ := e["extensions"].(map[string]any)["code"].(string)
		codes = append(codes, code)
	}
	return codes
}

// postSandboxOp runs a mutation taking a sandbox's ID (and more input) at
// the serve process at url as the holder of token, safe to call from any
// goroutine.
func postSandboxOp(url, token, mutation, id string, extra map[string]any) (map[string]any, []map[string]any, error) {
	in := map[string]any{"id": id}
	for k, v := range extra {
		in[k] = v
	}
	typ := map[string]string{"setSandboxTimeout": "SetSandboxTimeoutInput"}[mutation]
	if typ == "" {
		typ = "SandboxIdInput"
	}
	return post(url, token, `mutation($in: `+typ+`!) { `+mutation+`(input: $in) { sandbox { id } } }`, map[string]any{"in": in})
}

// sandboxState reads a sandbox's state through the API.
func (c *cluster) sandboxState(id string) string {
	c.t.Helper()
	return c.must(c.member, `query($id: ID!) { sandbox(id: $id) { state } }`, map[string]any{"id": id}, "sandbox", "state")
}

// warm counts a template's free warm instances in state (any for ""), of
// its current instance version when current, else of any older one.
func (c *cluster) warm(template, state string, current bool) int {
	c.t.Helper()
	id := decode(c.t, ids.SandboxTemplate, template)
	op := "="
	if !current {
		op = "<"
	}
	return c.count(`instances i JOIN sandbox_templates t ON t.id = i.warm_template_id
		WHERE t.id = $1 AND i.claimed_at IS NULL AND i.desired_state <> 'DELETED' AND ($2 = '' OR i.state = $2)
		AND i.warm_template_version `+op+` t.instance_version`, id, state)
}

// warmCount is a template's warm count.
func (c *cluster) warmCount(template string) int {
	c.t.Helper()
	var n int
	if err := c.db.QueryRow(context.Background(), "SELECT warm_count FROM sandbox_templates WHERE id = $1",
		decode(c.t, ids.SandboxTemplate, template)).Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

// decode is the UUID of an API ID of kind k.
func decode(t testing.TB, k ids.Kind, s string) uuid.UUID {
	t.Helper()
	id, ok := ids.Decode(k, s)
	if !ok {
		t.Fatalf("%q is not an ID of kind %s", s, k)
	}
	return id
}

// warmVersionOf is the warm template version of a sandbox's instance, 0 for a
// cold one.
func (c *cluster) warmVersionOf(sandbox string) int64 {
	c.t.Helper()
	var v *int64
	err := c.db.QueryRow(context.Background(), `SELECT warm_template_version FROM instances WHERE sandbox_id = $1`,
		decode(c.t, ids.Sandbox, sandbox)).Scan(&v)
	if err != nil {
		c.t.Fatal(err)
	}
	if v == nil {
		return 0
	}
	return *v
}
