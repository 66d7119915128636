package reconciler_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/reconciler"
)

// rebootEnv is a RUNNING instance on host hv-1 asked to reboot, and two
// reconcilers; the host's side of the command is played by finish.
type rebootEnv struct {
	*env
	hv, inst uuid.UUID
}

// setupReboot places the instance on a host speaking protocol (nil: the
// current one), running, and asks for the reboot before the reconcilers
// start.
func setupReboot(t *testing.T, protocol *int16) *rebootEnv {
	t.Helper()
	e := &rebootEnv{env: setup(t)}
	if protocol == nil {
		e.hv = e.host("hv-1", 8)
	} else {
		e.hv = e.hostSpeaking("hv-1", 8, protocol)
	}
	e.inst = e.create("vm")
	_, err := e.db.Exec(context.Background(), `INSERT INTO allocations (id, host_id, tenant_id, instance_id, vcpus, memory_mb, disk_gb)
		SELECT gen_random_uuid(), $2, tenant_id, id, vcpus, memory_mb, disk_gb FROM instances WHERE id = $1`, e.inst, e.hv)
	e.check(err)
	_, err = e.db.Exec(context.Background(), "UPDATE instances SET state = 'RUNNING', host_id = $2, spec_power = 'running', observed_state = 'running' WHERE id = $1", e.inst, e.hv)
	e.check(err)
	got, err := e.svc.RebootInstance(e.ctx, e.inst)
	e.check(err)
	if got.State != "REBOOTING" {
		t.Fatalf("after rebootInstance: %s", got.State)
	}
	// No rescan within the test: each step is woken by what it waits for.
	e.reconcilers(2, func(c *reconciler.Config) { c.HostSilentAfter, c.RescanInterval = time.Minute, time.Hour })
	return e
}

// command waits for the reboot command to be queued and returns it.
func (e *rebootEnv) command() uuid.UUID {
	e.t.Helper()
	var id *uuid.UUID
	e.eventually(10*time.Second, "the reboot command", func() bool {
		e.check(e.db.QueryRow(context.Background(), "SELECT reboot_command_id FROM instances WHERE id = $1", e.inst).Scan(&id))
		return id != nil
	})
	return *id
}

// state reads the instance's state, reason and reboot command.
func (e *rebootEnv) state() (state, reason string, cmd *uuid.UUID) {
	e.t.Helper()
	e.check(e.db.QueryRow(context.Background(), "SELECT state, state_reason, reboot_command_id FROM instances WHERE id = $1", e.inst).Scan(&state, &reason, &cmd))
	return state, reason, cmd
}

// rebooted waits for the instance to run again and checks its reason.
func (e *rebootEnv) rebooted(reason string) {
	e.t.Helper()
	e.eventually(10*time.Second, "RUNNING again", func() bool { s, _, _ := e.state(); return s == "RUNNING" })
	if _, got, cmd := e.state(); !strings.HasPrefix(got, reason) || (reason == "" && got != "") || cmd != nil {
		e.t.Errorf("running with reason %q and reboot command %v, want reason %q and none", got, cmd, reason)
	}
}

// TestReboot: a REBOOTING instance gets one instance.reboot command on its
// host (lane interactive, naming it, with a grace), and is RUNNING again
// once the command ends: with no reason when it succeeded, with the
// failure when it failed or its host cannot run commands.
func TestReboot(t *testing.T) {
	t.Parallel()
	t.Run("succeeded", func(t *testing.T) {
		t.Parallel()
		e := setupReboot(t, nil)
		cmd := e.command()
		var (
			kind, lane string
			payload    hostproto.RebootPayload
			raw        []byte
			gen        int64
		)
		e.check(e.db.QueryRow(context.Background(), "SELECT kind, lane, payload FROM host_commands WHERE id = $1 AND host_id = $2", cmd, e.hv).Scan(&kind, &lane, &raw))
		e.check(json.Unmarshal(raw, &payload))
		if kind != hostproto.KindInstanceReboot || lane != string(hostproto.LaneInteractive) ||
			payload.InstanceID != ids.Encode(ids.Instance, e.inst) || payload.GraceSeconds <= 0 {
			t.Fatalf("command %s %s %+v", kind, lane, payload)
		}
		e.check(e.db.QueryRow(context.Background(), "SELECT spec_generation FROM hosts WHERE id = $1", e.hv).Scan(&gen))
		if gen == 0 {
			t.Error("the host's generation was not bumped")
		}
		if s, _, _ := e.state(); s != "REBOOTING" {
			t.Fatalf("while the command runs: %s", s)
		}
		e.finish(cmd, "SUCCEEDED", "", "", false, true)
		e.rebooted("")
		if n := e.count("host_commands"); n != 1 {
			t.Errorf("%d commands queued, want 1", n)
		}
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		e := setupReboot(t, nil)
		e.finish(e.command(), "FAILED", "", "shut down vm: guest froze", false, true)
		e.rebooted("reboot failed on host hv-1: shut down vm: guest froze")
	})
	t.Run("past its deadline", func(t *testing.T) {
		t.Parallel()
		e := setupReboot(t, nil)
		e.finish(e.command(), "FAILED", "", "deadline passed", true, true)
		e.rebooted("reboot failed on host hv-1: deadline passed")
	})
	t.Run("host too old for commands", func(t *testing.T) {
		t.Parallel()
		old := int16(2)
		e := setupReboot(t, &old)
		e.rebooted("reboot failed: host hv-1 speaks host protocol 2")
		if n := e.count("host_commands"); n != 0 {
			t.Errorf("%d commands queued", n)
		}
	})
}
