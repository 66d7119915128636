package graph_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const setDesired = `mutation($id: ID!) { %s(input: {id: $id}) { instance { desiredState state version } } }`

type instanceView struct {
	DesiredState, State string
	Version             int
}

func (e *env) setDesired(token, mutation, id string) (instanceView, response) {
	e.t.Helper()
	r := e.do(token, strings.Replace(setDesired, "%s", mutation, 1), map[string]any{"id": id})
	var out map[string]struct{ Instance instanceView }
	if r.Data != nil {
		decodeInto(e.t, r.Data, &out)
	}
	return out[mutation].Instance, r
}

func TestDesiredState(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	id := e.id(w.member, createInstance, map[string]any{"in": w.input("vm")}, "createInstance", "instance", "id")

	steps := []struct {
		mutation     string
		want         string
		version      int
		outbox       int // rows after the step
		code         string
		auditOutcome string
	}{
		{"stopInstance", "STOPPED", 2, 2, "", "success"},
		{"stopInstance", "STOPPED", 2, 2, "", "success"}, // already wanted: nothing changes
		{"startInstance", "RUNNING", 3, 3, "", "success"},
		{"deleteInstance", "DELETED", 4, 4, "", "success"},
		{"deleteInstance", "DELETED", 4, 4, "", "success"},
		{"startInstance", "", 0, 4, "FAILED_PRECONDITION", "failure"},
		{"stopInstance", "", 0, 4, "FAILED_PRECONDITION", "failure"},
	}
	for _, s := range steps {
		t.Run(s.mutation+"→"+s.want+s.code, func(t *testing.T) {
			audits := e.count("audit_events", "target_id IS NOT NULL AND action LIKE 'instance.%'")
			got, r := e.setDesired(w.member, s.mutation, id)
			if r.code() != s.code {
				t.Fatalf("errors = %+v, want %s", r.Errors, s.code)
			}
			if s.code == "" && (got.DesiredState != s.want || got.Version != s.version || got.State != "PENDING") {
				t.Fatalf("instance = %+v, want desired %s version %d", got, s.want, s.version)
			}
			if n := e.count("outbox", "key = (SELECT id FROM instances)"); n != s.outbox {
				t.Errorf("outbox rows = %d, want %d", n, s.outbox)
			}
			if n := e.count("audit_events", "target_id IS NOT NULL AND action LIKE 'instance.%'"); n != audits+1 {
				t.Errorf("audit rows %d → %d, want one more", audits, n)
			}
			action := map[string]string{"stopInstance": "instance.stop", "startInstance": "instance.start", "deleteInstance": "instance.delete"}[s.mutation]
			if n := e.count("audit_events", "id = (SELECT max(id) FROM audit_events) AND action = $1 AND outcome = $2", action, s.auditOutcome); n != 1 {
				t.Errorf("last audit event is not %s/%s", action, s.auditOutcome)
			}
		})
	}
}

// TestOneTransaction proves a desired-state change, its audit event and its
// outbox row commit together or not at all: when the outbox refuses the
// row, nothing of the change remains, and the failure is audited.
func TestOneTransaction(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	id := e.id(w.member, createInstance, map[string]any{"in": w.input("vm")}, "createInstance", "instance", "id")
	ctx := context.Background()
	_, err := e.db.Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'outbox refused: SELECT secret FROM vault'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION refuse();`)
	if err != nil {
		t.Fatal(err)
	}
	before := e.count("audit_events", "outcome = 'success'")

	_, r := e.setDesired(w.member, "stopInstance", id)
	if r.code() != "INTERNAL" {
		t.Fatalf("errors = %+v, want INTERNAL", r.Errors)
	}
	if msg := r.Errors[0].Message; strings.Contains(msg, "SELECT") || strings.Contains(msg, "outbox") || strings.Contains(msg, "vault") {
		t.Fatalf("internal error shows its insides: %q", msg)
	}
	if n := e.count("instances", "desired_state = 'RUNNING' AND version = 1"); n != 1 {
		t.Fatal("the desired state changed without its outbox row")
	}
	if n := e.count("audit_events", "outcome = 'success'"); n != before {
		t.Fatal("a success was audited for a change that did not commit")
	}
	if n := e.count("audit_events", "action = 'instance.stop' AND outcome = 'failure' AND error_code = 'INTERNAL'"); n != 1 {
		t.Fatal("the failed attempt was not audited")
	}

	t.Run("create too", func(t *testing.T) {
		r := e.do(w.member, createInstance, map[string]any{"in": w.input("second")})
		if r.code() != "INTERNAL" {
			t.Fatalf("errors = %+v", r.Errors)
		}
		if n := e.count("instances", "true"); n != 1 {
			t.Fatalf("instances = %d, want 1", n)
		}
	})
}

// TestConcurrentDesiredState races starts and stops on one instance: every
// change that committed bumped the version once and wrote one outbox row
// and one audit event, and the final desired state is the last one written.
func TestConcurrentDesiredState(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	id := e.id(w.member, createInstance, map[string]any{"in": w.input("vm")}, "createInstance", "instance", "id")
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			m := "stopInstance"
			if i%2 == 0 {
				m = "startInstance"
			}
			if _, r := e.setDesired(w.member, m, id); len(r.Errors) > 0 {
				t.Errorf("%s: %+v", m, r.Errors)
			}
		})
	}
	wg.Wait()
	var version int
	var desired string
	if err := e.db.QueryRow(context.Background(), "SELECT version, desired_state FROM instances").Scan(&version, &desired); err != nil {
		t.Fatal(err)
	}
	changes := e.count("audit_events", "action IN ('instance.start', 'instance.stop') AND NOT details ? 'unchanged'")
	if outbox := e.count("outbox", "true"); version != 1+changes || outbox != version {
		t.Fatalf("version %d, %d changes audited, %d outbox rows; want version = changes + 1 = outbox rows", version, changes, outbox)
	}
	if n := e.count("audit_events", "id = (SELECT max(id) FROM audit_events WHERE NOT details ? 'unchanged' AND action <> 'instance.create') AND details->>'to' = $1", desired); n != 1 {
		t.Fatalf("the last change audited is not to %s", desired)
	}
	t.Logf("%d of 40 requests changed the desired state", changes)
}

// TestRebootInstance: a RUNNING instance of a hosted pool moves to
// REBOOTING (the reconciler reboots it); anything else is refused and
// left as it was.
func TestRebootInstance(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	id := e.id(w.member, createInstance, map[string]any{"in": w.input("vm")}, "createInstance", "instance", "id")
	ctx := context.Background()
	set := func(sql string) {
		t.Helper()
		if _, err := e.db.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	lastAudit := func(outcome string) {
		t.Helper()
		if n := e.count("audit_events", "id = (SELECT max(id) FROM audit_events) AND action = 'instance.reboot' AND outcome = $1", outcome); n != 1 {
			t.Errorf("last audit event is not instance.reboot/%s", outcome)
		}
	}
	outbox := func() int { return e.count("outbox", "key = (SELECT id FROM instances)") }

	t.Run("a PENDING instance does not reboot", func(t *testing.T) {
		before := outbox()
		if _, r := e.setDesired(w.member, "rebootInstance", id); r.code() != "FAILED_PRECONDITION" || !strings.Contains(r.Errors[0].Message, "only a RUNNING instance reboots") {
			t.Fatalf("errors = %+v", r.Errors)
		}
		if outbox() != before || e.count("instances", "state = 'PENDING'") != 1 {
			t.Fatal("the refused reboot changed something")
		}
		lastAudit("failure")
	})
	set("UPDATE instances SET state = 'RUNNING'")
	var rebooting instanceView
	t.Run("a RUNNING instance is REBOOTING", func(t *testing.T) {
		before := outbox()
		got, r := e.setDesired(w.member, "rebootInstance", id)
		if r.Errors != nil || got.State != "REBOOTING" || got.DesiredState != "RUNNING" {
			t.Fatalf("instance = %+v, errors %+v", got, r.Errors)
		}
		if outbox() != before+1 {
			t.Errorf("outbox rows %d → %d, want one more", before, outbox())
		}
		lastAudit("success")
		rebooting = got
	})
	t.Run("asking again while it reboots changes nothing", func(t *testing.T) {
		got, r := e.setDesired(w.member, "rebootInstance", id)
		if r.Errors != nil || got != rebooting {
			t.Fatalf("instance = %+v, want %+v; errors %+v", got, rebooting, r.Errors)
		}
	})
	t.Run("a stopped instance does not reboot", func(t *testing.T) {
		set("UPDATE instances SET state = 'STOPPED', desired_state = 'STOPPED'")
		if _, r := e.setDesired(w.member, "rebootInstance", id); r.code() != "FAILED_PRECONDITION" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
	t.Run("an instance of a provider pool reboots through its provider", func(t *testing.T) {
		e.providerPool("cloud", w.tenant)
		set("UPDATE instances SET state = 'RUNNING', desired_state = 'RUNNING', pool_id = (SELECT id FROM pools WHERE name = 'cloud')")
		if got, r := e.setDesired(w.member, "rebootInstance", id); r.Errors != nil || got.State != "REBOOTING" {
			t.Fatalf("instance = %+v, errors %+v", got, r.Errors)
		}
	})
}

// TestInstanceHistory: an instance's history is every change of its state
// as recorded with it, oldest first, the first from nothing.
func TestInstanceHistory(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	id := e.id(w.member, createInstance, map[string]any{"in": w.input("vm")}, "createInstance", "instance", "id")
	for _, state := range []string{"PROVISIONING", "STARTING", "RUNNING"} {
		if _, err := e.db.Exec(context.Background(), "UPDATE instances SET state = $1", state); err != nil {
			t.Fatal(err)
		}
	}
	var out struct {
		Instance struct {
			History []struct {
				From *string
				To   string
				At   time.Time
			}
		}
	}
	e.must(w.member, `query($id: ID!) { instance(id: $id) { history { from to at } } }`, map[string]any{"id": id}, &out)
	var got []string
	for i, c := range out.Instance.History {
		from := "∅"
		if c.From != nil {
			from = *c.From
		}
		got = append(got, from+"→"+c.To)
		if i > 0 && c.At.Before(out.Instance.History[i-1].At) {
			t.Errorf("change %d is before the one before it", i)
		}
	}
	want := []string{"∅→PENDING", "PENDING→PROVISIONING", "PROVISIONING→STARTING", "STARTING→RUNNING"}
	if !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}
