package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket/wsjson"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/live"
	"github.com/better-compute/vps/sqlc"
)

// sandboxEventView is a SandboxEvent as the tests read it.
type sandboxEventView struct {
	Type     string
	Version  int
	Reason   string
	Snapshot bool
	Sandbox  struct{ ID, State, StartedFrom string }
}

const sandboxEventFields = `type version reason snapshot sandbox { id state startedFrom }`

// setupSandboxes is a GraphQL endpoint with a live hub (not fed: what a
// subscription reads from Postgres arrives, nothing published does), and
// a tenant with a template.
func setupSandboxes(t *testing.T) (*env, world, templateView) {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	e := setupWith(t, func(c *graph.HandlerConfig) { c.Live = live.New(live.Config{Redis: rdb, Prefix: prefix}) })
	w := e.world("alpha")
	return e, w, e.template(w, "py", nil)
}

// step moves an instance to state, with reason, as the reconciler does:
// in one transaction that writes its event.
func (e *env) step(instance, state, reason string) {
	e.t.Helper()
	e.change(instance, `state = $2, state_reason = $3`, state, reason)
}

// change sets an instance's columns by set ($1 is its ID, args follow)
// and its next version, as the reconciler does: in one transaction that
// writes its event.
func (e *env) change(instance, set string, args ...any) {
	e.t.Helper()
	id, ok := ids.Decode(ids.Instance, instance)
	if !ok {
		e.t.Fatalf("not an instance ID: %s", instance)
	}
	err := pgx.BeginFunc(context.Background(), e.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		if _, err := tx.Exec(context.Background(), `UPDATE instances SET `+set+`, version = version + 1, updated_at = now()
			WHERE id = $1`, append([]any{id}, args...)...); err != nil {
			return err
		}
		inst, err := q.GetInstance(context.Background(), id)
		if err != nil {
			return err
		}
		return events.Enqueue(context.Background(), q, vps.TopicInstances, events.Updated, inst)
	})
	if err != nil {
		e.t.Fatalf("change %s (%s %v): %v", instance, set, args, err)
	}
}

// history reads a sandbox's events as token, page by page of two.
func (e *env) history(token, sandbox string) []sandboxEventView {
	e.t.Helper()
	var all []sandboxEventView
	var after any
	for {
		var out struct {
			Sandbox struct {
				Events struct {
					TotalCount int
					Nodes      []sandboxEventView
					PageInfo   struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
		}
		e.must(token, `query($id: ID!, $after: String) { sandbox(id: $id) { events(first: 2, after: $after) {
			totalCount nodes { `+sandboxEventFields+` } pageInfo { hasNextPage endCursor } } } }`,
			map[string]any{"id": sandbox, "after": after}, &out)
		all = append(all, out.Sandbox.Events.Nodes...)
		if !out.Sandbox.Events.PageInfo.HasNextPage {
			if out.Sandbox.Events.TotalCount != len(all) {
				e.t.Errorf("totalCount %d, %d events", out.Sandbox.Events.TotalCount, len(all))
			}
			return all
		}
		after = out.Sandbox.Events.PageInfo.EndCursor
	}
}

// steps shows events as TYPE/state, in order, failing unless their
// versions count from 1.
func steps(t *testing.T, evs []sandboxEventView) string {
	t.Helper()
	var out []string
	for i, ev := range evs {
		if ev.Version != i+1 {
			t.Errorf("event %d (%s) has version %d", i, ev.Type, ev.Version)
		}
		s := ev.Type + "/" + ev.Sandbox.State
		if ev.Reason != "" {
			s += "(" + ev.Reason + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestSandboxEventsLifecycle(t *testing.T) {
	t.Parallel()
	e, w, tpl := setupSandboxes(t)
	sbx := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	set := func(op string, extra string) {
		t.Helper()
		e.must(w.member, `mutation($id: ID!) { `+op+`(input: {id: $id`+extra+`}) { sandbox { id } } }`, map[string]any{"id": sbx.ID}, nil)
	}
	inst := sbx.Instance.ID
	e.step(inst, "PROVISIONING", "")
	e.step(inst, "STARTING", "")
	e.step(inst, "RUNNING", "")
	e.step(inst, "RUNNING", "") // a change that is no step
	set("pauseSandbox", "")
	e.step(inst, "PAUSED", "")
	set("resumeSandbox", "")
	e.step(inst, "RUNNING", "")
	set("setSandboxTimeout", ", timeout: 600")
	e.step(inst, "LOST", "its host went silent")
	e.step(inst, "LOST", "its host went silent for long") // still lost: no new step
	e.step(inst, "RUNNING", "")                           // back: it had started
	set("deleteSandbox", "")
	e.step(inst, "DELETING", "")
	e.step(inst, "DELETED", "")

	want := "CREATED/STARTING STARTED/RUNNING PAUSED/PAUSED RESUMED/RUNNING TIMEOUT_CHANGED/RUNNING " +
		"FAILED/LOST(its host went silent) DELETED/DELETED"
	if got := steps(t, e.history(w.member, sbx.ID)); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	// Each went to the tenant's channel, on the outbox, as instance events do.
	if n := e.count("outbox", "topic = 'vps.events' AND channel = $1 AND payload->>'kind' = 'sandbox'", events.TenantChannel(decode(t, ids.Tenant, w.tenant))); n != 7 {
		t.Errorf("%d sandbox events in the outbox, want 7", n)
	}

	t.Run("expired, recorded by the expiry's function", func(t *testing.T) {
		other := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
		id := decode(t, ids.Sandbox, other.ID)
		err := pgx.BeginFunc(context.Background(), e.db, func(tx pgx.Tx) error {
			q := sqlc.New(tx)
			if _, err := q.LockSandboxInstance(context.Background(), &id); err != nil {
				return err
			}
			if _, err := q.EndSandbox(context.Background(), sqlc.EndSandboxParams{ID: id, EndedAs: "EXPIRED"}); err != nil {
				return err
			}
			return events.RecordSandbox(context.Background(), q, id, events.Expired, "its timeout passed")
		})
		if err != nil {
			t.Fatal(err)
		}
		e.step(other.Instance.ID, "RUNNING", "") // ended: no step
		if got := steps(t, e.history(w.member, other.ID)); got != "CREATED/STARTING EXPIRED/EXPIRED(its timeout passed)" {
			t.Errorf("events: %s", got)
		}
	})
	t.Run("failed before it ran", func(t *testing.T) {
		other := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
		e.step(other.Instance.ID, "ERROR", "the image does not boot")
		if got := steps(t, e.history(w.member, other.ID)); got != "CREATED/STARTING FAILED/ERROR(the image does not boot)" {
			t.Errorf("events: %s", got)
		}
	})
}

func TestSandboxEventsWarm(t *testing.T) {
	t.Parallel()
	e, w, tpl := setupSandboxes(t)
	e.warm(tpl.ID, 2)
	var warm []string
	rows, err := e.db.Query(context.Background(), "SELECT id FROM instances WHERE warm_template_id IS NOT NULL ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		rows.Scan(&id)
		warm = append(warm, ids.Encode(ids.Instance, id))
	}
	// One is booted and paused, ready; the other still runs on its way to
	// pausing. The ready one is claimed first.
	e.step(warm[0], "PAUSED", "")
	e.step(warm[1], "RUNNING", "")

	first := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	e.step(first.Instance.ID, "RUNNING", "") // resumed
	second := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	for _, c := range []struct {
		sbx  sandboxView
		want string
	}{
		{first, "CREATED/STARTING STARTED/RUNNING"},
		// Its instance ran when it was claimed: it started at once.
		{second, "CREATED/RUNNING STARTED/RUNNING"},
	} {
		evs := e.history(w.member, c.sbx.ID)
		if got := steps(t, evs); got != c.want || c.sbx.StartedFrom != "WARM" || evs[len(evs)-1].Sandbox.StartedFrom != "WARM" {
			t.Errorf("%s (from %s): %s, want %s", c.sbx.ID, c.sbx.StartedFrom, got, c.want)
		}
	}
}

// subscribeSandboxes starts a sandboxEvents subscription as token and
// returns a function that reads its next message's payload.
func (e *env) subscribeSandboxes(t *testing.T, token string, vars map[string]any) func() (json.RawMessage, string) {
	t.Helper()
	conn, ctx := e.dialWS(t, "Bearer "+token)
	var msg struct {
		Type    string
		Payload json.RawMessage
	}
	if err := wsjson.Read(ctx, conn, &msg); err != nil || msg.Type != "connection_ack" {
		t.Fatalf("init: %+v, %v", msg, err)
	}
	wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription($f: SandboxEventFilter) { sandboxEvents(filter: $f, includeCurrent: true) { ` + sandboxEventFields + ` } }`, "variables": vars}})
	return func() (json.RawMessage, string) {
		t.Helper()
		if err := wsjson.Read(ctx, conn, &msg); err != nil {
			t.Fatalf("read: %v", err)
		}
		return msg.Payload, msg.Type
	}
}

func TestSandboxEventsTenants(t *testing.T) {
	t.Parallel()
	e, a, tpl := setupSandboxes(t)
	b := e.world("beta")
	bTpl := e.template(b, "py", nil)
	sa := e.sandbox(a.member, map[string]any{"templateId": tpl.ID})
	e.step(sa.Instance.ID, "RUNNING", "")
	sb := e.sandbox(b.member, map[string]any{"templateId": bTpl.ID})

	t.Run("another tenant's history is NOT_FOUND", func(t *testing.T) {
		r := e.do(b.member, `query($id: ID!) { sandbox(id: $id) { events { nodes { type } } } }`, map[string]any{"id": sa.ID})
		if r.code() != "NOT_FOUND" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
	for _, c := range []struct {
		name, field string
		filter      map[string]any
	}{
		{"another tenant's sandbox", "filter.ids[1]", map[string]any{"ids": []string{sb.ID, sa.ID}}},
		{"another tenant's template", "filter.templateId", map[string]any{"templateId": tpl.ID}},
	} {
		t.Run(c.name+" in a subscription's filter is NOT_FOUND", func(t *testing.T) {
			next := e.subscribeSandboxes(t, b.member, map[string]any{"f": c.filter})
			payload, typ := next()
			if !strings.Contains(string(payload), `"code":"NOT_FOUND","field":"`+c.field+`"`) || strings.Contains(string(payload), `"sandbox"`) {
				t.Fatalf("%s: %s", typ, payload)
			}
		})
	}
	t.Run("the current state is the caller's own", func(t *testing.T) {
		// sb was created after sa, and the current state comes in ID order:
		// sa would come first.
		next := e.subscribeSandboxes(t, b.member, nil)
		payload, typ := next()
		var data struct {
			Data struct{ SandboxEvents sandboxEventView }
		}
		decodeInto(t, payload, &data)
		if ev := data.Data.SandboxEvents; typ != "next" || ev.Sandbox.ID != sb.ID || !ev.Snapshot || ev.Type != "CREATED" || ev.Version != 1 {
			t.Fatalf("%s: %s", typ, payload)
		}
	})
	t.Run("an operator's current state has both", func(t *testing.T) {
		next := e.subscribeSandboxes(t, e.operator, nil)
		var got []string
		for range 2 {
			payload, _ := next()
			var data struct {
				Data struct{ SandboxEvents sandboxEventView }
			}
			decodeInto(t, payload, &data)
			ev := data.Data.SandboxEvents
			got = append(got, fmt.Sprintf("%s %s/%s v%d", ev.Sandbox.ID, ev.Type, ev.Sandbox.State, ev.Version))
		}
		want := fmt.Sprintf("[%s STARTED/RUNNING v2 %s CREATED/STARTING v1]", sa.ID, sb.ID)
		if fmt.Sprint(got) != want {
			t.Fatalf("got %v, want %s", got, want)
		}
	})
}

// decode decodes an API ID of kind k.
func decode(t *testing.T, k ids.Kind, s string) uuid.UUID {
	t.Helper()
	id, ok := ids.Decode(k, s)
	if !ok {
		t.Fatalf("not a %s ID: %s", k, s)
	}
	return id
}
