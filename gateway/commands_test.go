package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// queue queues a command for the env's host as the reconciler would (its
// row, the host's generation bumped, the host woken) and returns its ID.
func (e *env) queue(kind string, lane hostproto.Lane, payload string) uuid.UUID {
	e.t.Helper()
	id := ids.New()
	e.exec(`INSERT INTO host_commands (id, host_id, kind, lane, payload, deadline, created_at) VALUES ($1, $2, $3, $4, $5, now() + interval '1 hour', clock_timestamp())`,
		id, e.host, kind, string(lane), payload)
	e.exec("UPDATE hosts SET spec_generation = spec_generation + 1 WHERE id = $1", e.host)
	e.rdb.Publish(context.Background(), e.prefix+events.HostChannel(e.host), "")
	return id
}

// command is a host_commands row as the tests read it.
type command struct {
	State, Error      string
	Progress          int
	Result            []byte
	Started, Finished bool
	Abandoned, Acked  bool
	// Outbox counts the rows handing it to its kind's owner.
	Outbox int
}

func (e *env) command(id uuid.UUID) command {
	e.t.Helper()
	var c command
	if err := e.db.QueryRow(context.Background(), `SELECT state, error, progress, result, started_at IS NOT NULL, finished_at IS NOT NULL,
		abandoned_at IS NOT NULL, acknowledged_at IS NOT NULL, (SELECT count(*) FROM outbox WHERE topic = 'vps.commands' AND key = c.id)
		FROM host_commands c WHERE id = $1`, id).Scan(&c.State, &c.Error, &c.Progress, &c.Result, &c.Started, &c.Finished, &c.Abandoned, &c.Acked, &c.Outbox); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// generation is the host's spec generation.
func (e *env) generation() int64 {
	e.t.Helper()
	var gen int64
	if err := e.db.QueryRow(context.Background(), "SELECT spec_generation FROM hosts WHERE id = $1", e.host).Scan(&gen); err != nil {
		e.t.Fatal(err)
	}
	return gen
}

// reportCommands posts a report of the current version at the host's
// generation giving the statuses of commands.
func (e *env) reportCommands(statuses ...hostproto.CommandStatus) {
	e.t.Helper()
	resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: e.generation(), Commands: statuses})
	if resp.StatusCode != 204 {
		e.t.Fatalf("report: %d %s", resp.StatusCode, body(e.t, resp.Body))
	}
}

// specCommands are the command IDs of the host's current spec.
func (e *env) specCommands() []string {
	e.t.Helper()
	spec, code := e.spec(0, 0)
	if code != 200 {
		e.t.Fatalf("spec: %d", code)
	}
	var out []string
	for _, c := range spec.Commands {
		out = append(out, c.ID)
	}
	return out
}

// TestCommandDelivery: a host speaking version 3 finds its open commands
// in its spec, oldest first, with what to run; an older host's spec has
// none (nor restores, which it is refused), and another host's commands are
// not in it.
func TestCommandDelivery(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := iam.WithPrincipal(context.Background(), control.System)
	first := e.queue(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, `{"instanceId":"ins_a","snapshotId":"snp_a"}`)
	second := e.queue(hostproto.KindSnapshotPurge, hostproto.LaneInteractive, `{"snapshotId":"snp_b"}`)
	other, err := e.svc.CreateHost(ctx, e.pool, "hv-2")
	if err != nil {
		t.Fatal(err)
	}
	e.exec(`INSERT INTO host_commands (id, host_id, kind, lane, payload, deadline) VALUES ($1, $2, 'snapshot.purge', 'interactive', '{}', now() + interval '1 hour')`, ids.New(), other.Host.ID)

	t.Run("a version 3 host gets its open commands, oldest first", func(t *testing.T) {
		spec, code := e.spec(0, 0)
		if code != 200 || len(spec.Commands) != 2 {
			t.Fatalf("%d %+v", code, spec)
		}
		c := spec.Commands[0]
		var payload hostproto.SnapshotPayload
		json.Unmarshal(c.Payload, &payload)
		if c.ID != ids.Encode(ids.HostCommand, first) || c.Kind != hostproto.KindInstanceSnapshot || c.Lane != hostproto.LaneBulk || c.Attempt != 1 ||
			c.Abandon || time.Until(c.Deadline) < 59*time.Minute || payload != (hostproto.SnapshotPayload{InstanceID: "ins_a", SnapshotID: "snp_a"}) {
			t.Fatalf("first command = %+v (payload %s)", c, c.Payload)
		}
		if spec.Commands[1].ID != ids.Encode(ids.HostCommand, second) || spec.Commands[1].Lane != hostproto.LaneInteractive {
			t.Fatalf("second command = %+v", spec.Commands[1])
		}
	})
	t.Run("an older host gets none", func(t *testing.T) {
		resp := e.requestAt(hostproto.SandboxVersion, "GET", hostproto.SpecPathOf(hostproto.SandboxVersion)+"?after=0&wait=0", e.credential, nil)
		raw := body(t, resp.Body)
		if resp.StatusCode != 200 || strings.Contains(raw, "commands") || strings.Contains(raw, "cmd_") {
			t.Fatalf("%d %s, want a spec without commands", resp.StatusCode, raw)
		}
	})

	tmpl, err := e.svc.CreateSandboxTemplate(ctx, control.SandboxTemplateInput{TenantID: e.tenant, Name: "py", PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image})
	if err != nil {
		t.Fatal(err)
	}
	sbx, err := e.svc.CreateSandbox(ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: tmpl.ID})
	if err != nil {
		t.Fatal(err)
	}
	snap := ids.New()
	e.exec(`INSERT INTO sandbox_snapshots (id, tenant_id, sandbox_id, template_id, name, state, host_id, size_bytes, sha256)
		VALUES ($1, $2, $3, $4, 'deps', 'READY', $5, 1, 'x')`, snap, e.tenant, sbx.ID, tmpl.ID, e.host)
	e.exec("UPDATE instances SET restore_from = $1 WHERE id = $2", snap, sbx.InstanceID)
	gen := e.placeOn(sbx.InstanceID, "running")
	restored := ids.Encode(ids.Instance, sbx.InstanceID)

	t.Run("a version 3 host gets a restore's snapshot", func(t *testing.T) {
		spec, code := e.spec(gen-1, 0)
		if code != 200 || len(spec.Instances) != 1 || spec.Instances[0].ID != restored || spec.Instances[0].RestoreFrom != ids.Encode(ids.SandboxSnapshot, snap) {
			t.Fatalf("%d %+v", code, spec)
		}
	})
	t.Run("an older host holding a restore is refused its spec", func(t *testing.T) {
		resp := e.requestAt(hostproto.SandboxVersion, "GET", hostproto.SpecPathOf(hostproto.SandboxVersion)+"?after=0&wait=0", e.credential, nil)
		if b := body(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(b, restored) || !strings.Contains(b, "need 3") {
			t.Fatalf("%d %q, want 400 naming %s", resp.StatusCode, b, restored)
		}
	})
}

// TestCommandReports: what a host reports of its commands is recorded —
// running with its progress, then its end with its result or error, handed
// to the kind's owner (an outbox row) and acknowledged, which takes the
// command out of the next spec and wakes the host's long-poll. A final
// state is never overwritten, a repeated report changes nothing, and
// statuses of commands that are not the host's are ignored, logged once.
func TestCommandReports(t *testing.T) {
	t.Parallel()
	var warnings atomic.Int32
	e := setup(t, func(c *gateway.Config) {
		c.Logger = slog.New(countingHandler{Handler: slog.NewTextHandler(io.Discard, nil), warnings: &warnings})
	})
	snap := e.queue(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, `{}`)
	purge := e.queue(hostproto.KindSnapshotPurge, hostproto.LaneInteractive, `{}`)
	quit := e.queue(hostproto.KindSnapshotPurge, hostproto.LaneInteractive, `{}`)
	snapID, purgeID, quitID := ids.Encode(ids.HostCommand, snap), ids.Encode(ids.HostCommand, purge), ids.Encode(ids.HostCommand, quit)

	t.Run("running is recorded with its progress", func(t *testing.T) {
		gen := e.generation()
		e.reportCommands(hostproto.CommandStatus{ID: snapID, State: hostproto.CommandRunning, Progress: 40})
		e.reportCommands(hostproto.CommandStatus{ID: snapID, State: hostproto.CommandRunning, Progress: 30}) // crossed on the wire
		if c := e.command(snap); c.State != "RUNNING" || c.Progress != 40 || !c.Started || c.Finished || c.Acked || c.Outbox != 0 {
			t.Fatalf("command = %+v", c)
		}
		if e.generation() != gen {
			t.Fatal("a running command changed the spec")
		}
	})
	t.Run("success is recorded, handed over and acknowledged, and leaves the spec", func(t *testing.T) {
		gen := e.generation()
		got := make(chan hostproto.NodeSpec, 1)
		go func() { s, _ := e.spec(gen, 25); got <- s }()
		testenv.Eventually(t, 5*time.Second, "the long-poll to wait", func() bool { return e.gw.Waiting() == 1 })
		e.reportCommands(hostproto.CommandStatus{ID: snapID, State: hostproto.CommandSucceeded, Result: json.RawMessage(`{"sizeBytes":5,"sha256":"ab"}`)})
		c := e.command(snap)
		if c.State != "SUCCEEDED" || c.Progress != 100 || !c.Finished || !c.Acked || c.Outbox != 1 {
			t.Fatalf("command = %+v", c)
		}
		var result hostproto.SnapshotResult
		if err := json.Unmarshal(c.Result, &result); err != nil || result.SizeBytes != 5 || result.SHA256 != "ab" {
			t.Fatalf("result %s", c.Result)
		}
		select {
		case spec := <-got:
			if spec.Generation != gen+1 || len(spec.Commands) != 2 || spec.Commands[0].ID != purgeID {
				t.Fatalf("spec after the acknowledgement = %+v", spec)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the acknowledgement did not wake the long-poll")
		}
	})
	t.Run("a repeated report changes nothing", func(t *testing.T) {
		gen := e.generation()
		e.reportCommands(hostproto.CommandStatus{ID: snapID, State: hostproto.CommandSucceeded, Result: json.RawMessage(`{"sizeBytes":6,"sha256":"cd"}`)})
		e.reportCommands(hostproto.CommandStatus{ID: snapID, State: hostproto.CommandRunning, Progress: 10})
		if c := e.command(snap); c.State != "SUCCEEDED" || c.Outbox != 1 || !strings.Contains(string(c.Result), `"ab"`) || e.generation() != gen {
			t.Fatalf("command = %+v, generation %d (was %d)", c, e.generation(), gen)
		}
	})
	t.Run("failure is recorded with its error", func(t *testing.T) {
		e.reportCommands(hostproto.CommandStatus{ID: purgeID, State: hostproto.CommandFailed, Error: "disk full"})
		if c := e.command(purge); c.State != "FAILED" || c.Error != "disk full" || c.Result != nil || !c.Acked || c.Abandoned || c.Outbox != 1 {
			t.Fatalf("command = %+v", c)
		}
		e.reportCommands(hostproto.CommandStatus{ID: purgeID, State: hostproto.CommandSucceeded})
		if c := e.command(purge); c.State != "FAILED" || c.Outbox != 1 {
			t.Fatalf("a final state was overwritten: %+v", c)
		}
	})
	t.Run("abandoned without being told, it fails", func(t *testing.T) {
		e.reportCommands(hostproto.CommandStatus{ID: quitID, State: hostproto.CommandAbandoned})
		if c := e.command(quit); c.State != "FAILED" || c.Error != "the host abandoned it" || !c.Acked || c.Abandoned || c.Outbox != 1 {
			t.Fatalf("command = %+v", c)
		}
		if got := e.specCommands(); len(got) != 0 {
			t.Fatalf("spec commands %v, want none", got)
		}
	})
	t.Run("commands not the host's are ignored, logged once", func(t *testing.T) {
		ctx := iam.WithPrincipal(context.Background(), control.System)
		other, err := e.svc.CreateHost(ctx, e.pool, "hv-2")
		if err != nil {
			t.Fatal(err)
		}
		theirs := ids.New()
		e.exec(`INSERT INTO host_commands (id, host_id, kind, lane, payload, deadline) VALUES ($1, $2, 'snapshot.purge', 'interactive', '{}', now() + interval '1 hour')`, theirs, other.Host.ID)
		before := warnings.Load()
		never := ids.Encode(ids.HostCommand, ids.New())
		for range 2 {
			e.reportCommands(hostproto.CommandStatus{ID: ids.Encode(ids.HostCommand, theirs), State: hostproto.CommandSucceeded},
				hostproto.CommandStatus{ID: "cmd_nonsense", State: hostproto.CommandFailed},
				hostproto.CommandStatus{ID: never, State: hostproto.CommandRunning})
		}
		if c := e.command(theirs); c.State != "QUEUED" || c.Acked || c.Outbox != 0 {
			t.Fatalf("another host's command = %+v", c)
		}
		if n := warnings.Load() - before; n != 1 {
			t.Fatalf("logged %d times, want once", n)
		}
	})
}

// TestAbandonedCommand: a command the control plane failed (its deadline
// passed) is sent with abandon set and stays FAILED whatever the host says,
// until the host reports it abandoned: then it is acknowledged and leaves
// the spec. It is handed to its owner once, when it failed.
func TestAbandonedCommand(t *testing.T) {
	t.Parallel()
	e := setup(t)
	id := e.queue(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, `{}`)
	cmdID := ids.Encode(ids.HostCommand, id)
	e.reportCommands(hostproto.CommandStatus{ID: cmdID, State: hostproto.CommandRunning, Progress: 10})
	// What the deadline sweep does (reconciler/deadlines.go).
	e.exec(`UPDATE host_commands SET state = 'FAILED', error = 'deadline passed', abandoned_at = now(), finished_at = now() WHERE id = $1`, id)
	e.exec("UPDATE hosts SET spec_generation = spec_generation + 1 WHERE id = $1", e.host)

	spec, _ := e.spec(0, 0)
	if len(spec.Commands) != 1 || !spec.Commands[0].Abandon {
		t.Fatalf("spec commands %+v, want the command with abandon", spec.Commands)
	}
	for _, st := range []hostproto.CommandStatus{
		{ID: cmdID, State: hostproto.CommandRunning, Progress: 90},
		{ID: cmdID, State: hostproto.CommandSucceeded, Result: json.RawMessage(`{"sizeBytes":1,"sha256":"x"}`)},
		{ID: cmdID, State: hostproto.CommandFailed, Error: "late"},
	} {
		gen := e.generation()
		e.reportCommands(st)
		if c := e.command(id); c.State != "FAILED" || c.Error != "deadline passed" || c.Result != nil || c.Progress != 10 || c.Acked || e.generation() != gen {
			t.Fatalf("after %s: command = %+v", st.State, c)
		}
	}
	gen := e.generation()
	e.reportCommands(hostproto.CommandStatus{ID: cmdID, State: hostproto.CommandAbandoned})
	if c := e.command(id); c.State != "FAILED" || !c.Acked || c.Outbox != 0 || e.generation() != gen+1 {
		t.Fatalf("after abandoned: command = %+v, generation %d (was %d)", c, e.generation(), gen)
	}
	if got := e.specCommands(); len(got) != 0 {
		t.Fatalf("spec commands %v, want none", got)
	}
}

// TestInstanceGenerations: from version 3 each instance's status says
// which spec entry of it the host converged to: a status older than the
// instance's entry is ignored even in a current report, one at it is
// recorded, and an instance still being defined is neither observed nor
// absent. Version 2 has no defining state.
func TestInstanceGenerations(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := e.place("running") // the entry changes at gen
	e.queue(hostproto.KindSnapshotPurge, hostproto.LaneInteractive, `{}`)
	cur := e.generation() // a newer spec, the entry unchanged
	id := ids.Encode(ids.Instance, e.instance)
	observed := func() string {
		var s *string
		e.db.QueryRow(context.Background(), "SELECT observed_state FROM instances WHERE id = $1", e.instance).Scan(&s)
		if s == nil {
			return ""
		}
		return *s
	}
	post := func(st hostproto.InstanceStatus) {
		t.Helper()
		resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: cur, Instances: []hostproto.InstanceStatus{st}})
		if resp.StatusCode != 204 {
			t.Fatalf("report: %d %s", resp.StatusCode, body(t, resp.Body))
		}
	}

	t.Run("defining is neither observed nor absent", func(t *testing.T) {
		post(hostproto.InstanceStatus{ID: id, State: hostproto.StateDefining, Generation: gen - 1})
		if got := observed(); got != "" {
			t.Fatalf("observed %q, want nothing", got)
		}
	})
	t.Run("a status older than the entry is ignored", func(t *testing.T) {
		post(hostproto.InstanceStatus{ID: id, State: hostproto.StateStopped, Generation: gen - 1})
		if got := observed(); got != "" {
			t.Fatalf("observed %q, want nothing", got)
		}
	})
	t.Run("a status at the entry is recorded", func(t *testing.T) {
		post(hostproto.InstanceStatus{ID: id, State: hostproto.StateRunning, Generation: gen})
		if got := observed(); got != "running" {
			t.Fatalf("observed %q, want running", got)
		}
	})
	t.Run("defining after that is still not absent", func(t *testing.T) {
		post(hostproto.InstanceStatus{ID: id, State: hostproto.StateDefining, Generation: gen})
		if got := observed(); got != "running" {
			t.Fatalf("observed %q, want running kept", got)
		}
	})
	t.Run("version 2 has no defining", func(t *testing.T) {
		v := hostproto.SandboxVersion
		resp := e.requestAt(v, "POST", hostproto.ReportPathOf(v), e.credential, json.RawMessage(`{"protocol":`+strconv.Itoa(v)+`,"generation":`+strconv.FormatInt(cur, 10)+
			`,"instances":[{"id":"`+id+`","state":"defining"}]}`))
		if b := body(t, resp.Body); resp.StatusCode != 400 || !strings.HasPrefix(b, "instances[0].state: ") {
			t.Fatalf("%d %q, want 400 naming the state", resp.StatusCode, b)
		}
	})
}

// TestCommandMetrics: /metrics counts ended commands by kind and outcome
// (succeeded and failed as reported, deadline when the control plane
// failed them) and gives the age of the oldest unfinished command of each
// lane.
func TestCommandMetrics(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ok := e.queue(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, `{}`)
	bad := e.queue(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, `{}`)
	late := e.queue(hostproto.KindSnapshotPurge, hostproto.LaneInteractive, `{}`)
	e.queue(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, `{}`)
	e.exec("UPDATE host_commands SET created_at = now() - interval '1 minute' WHERE state = 'QUEUED' AND lane = 'bulk'")
	e.reportCommands(hostproto.CommandStatus{ID: ids.Encode(ids.HostCommand, ok), State: hostproto.CommandSucceeded},
		hostproto.CommandStatus{ID: ids.Encode(ids.HostCommand, bad), State: hostproto.CommandFailed, Error: "no"})
	// What the deadline sweep does (reconciler/deadlines.go).
	e.exec(`UPDATE host_commands SET state = 'FAILED', error = 'deadline passed', abandoned_at = now(), finished_at = now() WHERE id = $1`, late)

	metric := func(name string, labels map[string]string) float64 {
		return testenv.Metric(t, e.gw.Collectors(), name, labels)
	}
	for _, c := range []struct{ kind, outcome string }{
		{hostproto.KindInstanceSnapshot, "succeeded"}, {hostproto.KindInstanceSnapshot, "failed"}, {hostproto.KindSnapshotPurge, "deadline"},
	} {
		if n := metric("bc_host_commands_total", map[string]string{"kind": c.kind, "outcome": c.outcome}); n != 1 {
			t.Errorf("%s %s: %v, want 1", c.kind, c.outcome, n)
		}
	}
	if age := metric("bc_host_command_oldest_open_seconds", map[string]string{"lane": "bulk"}); age < 60 || age > 3600 {
		t.Errorf("oldest bulk command %vs old, want about a minute", age)
	}
	if age := metric("bc_host_command_oldest_open_seconds", map[string]string{"lane": "interactive"}); age != 0 {
		t.Errorf("oldest interactive command %vs old, want none", age)
	}
}
