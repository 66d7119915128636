package hostd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// cmdSetup is a host with a state dir whose instance ins_a runs, under a
// daemon that reports at once but beats only every hour, so that every
// report of a command's end was made by that end.
type cmdSetup struct {
	gw       *gateway
	rt       *blocking
	stateDir string
	d        *daemon
}

func setupCommands(t *testing.T, cfg fake.Config, configure ...func(*hostd.Config)) *cmdSetup {
	t.Helper()
	s := &cmdSetup{gw: newGateway(t), stateDir: t.TempDir()}
	cfg.StateDir = s.stateDir
	s.rt = newBlocking(t, cfg)
	s.d = s.start(t, configure...)
	gen := s.gw.setSpec(instance("ins_a", hostproto.PowerRunning))
	waitReport(t, s.gw, "ins_a running", func(r hostproto.Report) bool {
		return is(r, gen, map[string]hostproto.State{"ins_a": hostproto.StateRunning})
	})
	return s
}

// start starts a daemon over the setup's runtime and state dir.
func (s *cmdSetup) start(t *testing.T, configure ...func(*hostd.Config)) *daemon {
	t.Helper()
	withState := func(c *hostd.Config) { c.StateDir = s.stateDir }
	return start(t, s.gw, s.rt, append([]func(*hostd.Config){heartbeat(time.Hour), withState}, configure...)...)
}

// journal lists the command journal's files.
func (s *cmdSetup) journal(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.stateDir, "commands", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func newCommandID() string  { return ids.Encode(ids.HostCommand, ids.New()) }
func newSnapshotID() string { return ids.Encode(ids.SandboxSnapshot, ids.New()) }

func command(kind string, lane hostproto.Lane, payload any) hostproto.Command {
	b, _ := json.Marshal(payload)
	return hostproto.Command{
		ID: newCommandID(), Kind: kind, Lane: lane, Attempt: 1,
		Deadline: time.Now().Add(time.Hour), Payload: b,
	}
}

func snapshotCommand(instance, snap string) hostproto.Command {
	return command(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, hostproto.SnapshotPayload{InstanceID: instance, SnapshotID: snap})
}

func purgeCommand(snap string) hostproto.Command {
	return command(hostproto.KindSnapshotPurge, hostproto.LaneInteractive, hostproto.PurgePayload{SnapshotID: snap})
}

func rebootCommand(instance string) hostproto.Command {
	return command(hostproto.KindInstanceReboot, hostproto.LaneInteractive, hostproto.RebootPayload{InstanceID: instance, GraceSeconds: 1})
}

// commandStatus returns the status r carries of command id.
func commandStatus(r hostproto.Report, id string) (hostproto.CommandStatus, bool) {
	for _, st := range r.Commands {
		if st.ID == id {
			return st, true
		}
	}
	return hostproto.CommandStatus{}, false
}

// waitCommand waits for a report that says command id is in state.
func waitCommand(t *testing.T, gw *gateway, id string, state hostproto.CommandState) hostproto.CommandStatus {
	t.Helper()
	st, _ := commandStatus(waitCommands(t, gw, state, id), id)
	return st
}

// waitCommands waits for one report that says every command of ids is in
// state. Waiting for each in turn would miss commands that ended together:
// the report that satisfies the first wait says the others ended too, and
// no later report may come.
func waitCommands(t *testing.T, gw *gateway, state hostproto.CommandState, ids ...string) hostproto.Report {
	t.Helper()
	return waitReport(t, gw, fmt.Sprintf("commands %v %s", ids, state), func(r hostproto.Report) bool {
		for _, id := range ids {
			if st, _ := commandStatus(r, id); st.State != state {
				return false
			}
		}
		return true
	})
}

// snapshotFile returns the content of snap's file in the store, nil when
// absent.
func snapshotFile(t *testing.T, rt *blocking, snap string) []byte {
	t.Helper()
	path, err := rt.SnapshotPath(snap)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCommands(t *testing.T) {
	t.Parallel()
	s := setupCommands(t, fake.Config{})

	snap := newSnapshotID()
	take := snapshotCommand("ins_a", snap)
	s.gw.setCommands(take)
	st := waitCommand(t, s.gw, take.ID, hostproto.CommandSucceeded)
	var res hostproto.SnapshotResult
	if err := json.Unmarshal(st.Result, &res); err != nil {
		t.Fatalf("result %s: %v", st.Result, err)
	}
	file := snapshotFile(t, s.rt, snap)
	if disk, _ := s.rt.Disk("ins_a"); string(file) != string(disk) || res.SizeBytes != int64(len(disk)) || len(res.SHA256) != 64 {
		t.Errorf("result %+v, file %q; want the disk %q", res, file, disk)
	}

	purge := purgeCommand(snap)
	s.gw.setCommands(take, purge)
	waitCommand(t, s.gw, purge.ID, hostproto.CommandSucceeded)
	if snapshotFile(t, s.rt, snap) != nil {
		t.Error("the purged snapshot's file is still there")
	}

	shutdowns, starts := s.rt.count("shutdown", "ins_a"), s.rt.count("start", "ins_a")
	reboot := rebootCommand("ins_a")
	s.gw.setCommands(reboot)
	r := waitCommands(t, s.gw, hostproto.CommandSucceeded, reboot.ID)
	if s.rt.count("shutdown", "ins_a") != shutdowns+1 || s.rt.count("start", "ins_a") < starts+1 {
		t.Errorf("the reboot did not shut ins_a down and start it again")
	}
	if !is(r, r.Generation, map[string]hostproto.State{"ins_a": hostproto.StateRunning}) {
		t.Errorf("reported with its reboot's end: %+v", r.Instances)
	}

	failures := []struct {
		name string
		cmd  hostproto.Command
		want string
	}{
		{"unknown kind", command("instance.migrate", hostproto.LaneInteractive, struct{}{}), `unknown command kind "instance.migrate"`},
		{"unknown lane", command(hostproto.KindSnapshotPurge, "express", hostproto.PurgePayload{SnapshotID: snap}), `unknown lane "express"`},
		{"bad payload", command(hostproto.KindSnapshotPurge, hostproto.LaneInteractive, []int{1}), "bad payload"},
		{"missing snapshot ID", command(hostproto.KindInstanceSnapshot, hostproto.LaneBulk, hostproto.SnapshotPayload{InstanceID: "ins_a"}), "snapshotId"},
		{"instance not on the host", snapshotCommand("ins_x", newSnapshotID()), "no such domain"},
		{"reboot without a grace", command(hostproto.KindInstanceReboot, hostproto.LaneInteractive, hostproto.RebootPayload{InstanceID: "ins_a"}), "graceSeconds"},
		{"reboot of an instance not on the host", rebootCommand("ins_x"), "no such domain"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			s.gw.setCommands(tt.cmd)
			if st := waitCommand(t, s.gw, tt.cmd.ID, hostproto.CommandFailed); !strings.Contains(st.Error, tt.want) {
				t.Errorf("error %q, want it to say %q", st.Error, tt.want)
			}
		})
	}

	t.Run("a command that leaves the spec is forgotten", func(t *testing.T) {
		gen := s.gw.setCommands()
		waitReport(t, s.gw, "no commands", func(r hostproto.Report) bool { return r.Generation == gen && len(r.Commands) == 0 })
		if files := s.journal(t); len(files) != 0 {
			t.Errorf("journal keeps %v", files)
		}
	})
}

// TestLanes: while a bulk snapshot is held, an interactive purge runs and is
// reported, and a second bulk command waits for the lane's one slot.
func TestLanes(t *testing.T) {
	t.Parallel()
	s := setupCommands(t, fake.Config{})
	s.rt.hold("snapshot")

	first, second := snapshotCommand("ins_a", newSnapshotID()), snapshotCommand("ins_a", newSnapshotID())
	s.gw.setCommands(first, second)
	var firstSnap hostproto.SnapshotPayload
	json.Unmarshal(first.Payload, &firstSnap)
	s.rt.waitEntered(t, "snapshot "+firstSnap.SnapshotID)

	purge := purgeCommand(newSnapshotID())
	s.gw.setCommands(first, second, purge)
	r := waitReport(t, s.gw, "the purge succeeded", func(r hostproto.Report) bool {
		st, _ := commandStatus(r, purge.ID)
		return st.State == hostproto.CommandSucceeded
	})
	for _, c := range []hostproto.Command{first, second} {
		if st, _ := commandStatus(r, c.ID); st.State != hostproto.CommandRunning {
			t.Errorf("bulk command %s is %q, want running", c.ID, st.State)
		}
	}
	var secondSnap hostproto.SnapshotPayload
	json.Unmarshal(second.Payload, &secondSnap)
	if n := s.rt.count("snapshot", secondSnap.SnapshotID); n != 0 {
		t.Errorf("the second bulk command ran beside the first (%d calls): the bulk lane has one slot", n)
	}

	s.rt.release("snapshot")
	waitCommands(t, s.gw, hostproto.CommandSucceeded, first.ID, second.ID)
}

// TestCommandsAcrossRestarts: a daemon stopped mid-snapshot and started
// again over the same state dir runs the snapshot again, to one end, and
// never runs again a command that ended.
func TestCommandsAcrossRestarts(t *testing.T) {
	t.Parallel()
	s := setupCommands(t, fake.Config{})
	done := purgeCommand(newSnapshotID())
	s.gw.setCommands(done)
	waitCommand(t, s.gw, done.ID, hostproto.CommandSucceeded)

	s.rt.hold("snapshot")
	snap := newSnapshotID()
	take := snapshotCommand("ins_a", snap)
	s.gw.setCommands(done, take)
	s.rt.waitEntered(t, "snapshot "+snap)
	waitCommand(t, s.gw, take.ID, hostproto.CommandRunning)
	s.d.stop(t)
	s.rt.release("snapshot")

	s.gw.drain()
	second := s.start(t)
	want := waitCommand(t, s.gw, take.ID, hostproto.CommandSucceeded)
	second.stop(t)
	s.gw.drain()

	s.start(t) // after the end: the ends come from the journal
	waitCommands(t, s.gw, hostproto.CommandSucceeded, take.ID, done.ID)
	if got := s.rt.count("snapshot", snap); got != 2 {
		t.Errorf("%d snapshot calls, want 2: the interrupted one and the one that ended", got)
	}
	if got := s.rt.Calls(snap).Snapshot; got != 1 {
		t.Errorf("the runtime took the snapshot %d times, want once", got)
	}
	var donePayload hostproto.PurgePayload
	json.Unmarshal(done.Payload, &donePayload)
	if got := s.rt.Calls(donePayload.SnapshotID).PurgeSnapshot; got != 1 {
		t.Errorf("the ended purge ran %d times, want once", got)
	}
	if snapshotFile(t, s.rt, snap) == nil || len(want.Result) == 0 {
		t.Errorf("snapshot file missing or no result (%+v)", want)
	}
}

// TestAbandon: an abandoned command is stopped if it runs, what it made is
// removed even if it succeeded, and it is reported abandoned.
func TestAbandon(t *testing.T) {
	t.Parallel()
	for _, running := range []bool{false, true} {
		name := map[bool]string{false: "succeeded", true: "running"}[running]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := setupCommands(t, fake.Config{})
			if running {
				s.rt.hold("snapshot")
			}
			snap := newSnapshotID()
			take := snapshotCommand("ins_a", snap)
			s.gw.setCommands(take)
			if running {
				s.rt.waitEntered(t, "snapshot "+snap)
			} else {
				waitCommand(t, s.gw, take.ID, hostproto.CommandSucceeded)
			}

			take.Abandon = true
			s.gw.setCommands(take)
			waitCommand(t, s.gw, take.ID, hostproto.CommandAbandoned)
			if snapshotFile(t, s.rt, snap) != nil {
				t.Error("the abandoned snapshot's file is still there")
			}
			if got := s.rt.Calls(snap).PurgeSnapshot; got != 1 {
				t.Errorf("%d purges, want 1", got)
			}
		})
	}
}

// TestDeadlineOnTheHost: a command still running at its deadline is
// stopped, cleaned up and failed by the host itself.
func TestDeadlineOnTheHost(t *testing.T) {
	t.Parallel()
	s := setupCommands(t, fake.Config{})
	s.rt.hold("snapshot")
	snap := newSnapshotID()
	take := snapshotCommand("ins_a", snap)
	take.Deadline = time.Now().Add(200 * time.Millisecond)
	s.gw.setCommands(take)

	st := waitCommand(t, s.gw, take.ID, hostproto.CommandFailed)
	if st.Error != "deadline passed" {
		t.Errorf("error %q, want deadline passed", st.Error)
	}
	if got := s.rt.Calls(snap).PurgeSnapshot; got != 1 {
		t.Errorf("%d purges, want 1: a command stopped at its deadline is cleaned up", got)
	}
}
