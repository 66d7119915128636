package e2e

import (
	"context"
	"time"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// snapshotRef is a snapshot as the API shows it.
type snapshotRef struct {
	id, state, reason, sha256 string
	size                      int64
}

// takeSnapshot snapshots a sandbox as the member and returns the
// snapshot's ID; it is PENDING.
func (c *cluster) takeSnapshot(sandbox, name string) string {
	c.t.Helper()
	return c.must(c.member, `mutation($in: CreateSandboxSnapshotInput!) { createSandboxSnapshot(input: $in) { sandboxSnapshot { id } } }`,
		map[string]any{"in": map[string]any{"sandboxId": sandbox, "name": name}}, "createSandboxSnapshot", "sandboxSnapshot", "id")
}

// snapshot reads a snapshot through the API; a missing one has no ID.
func (c *cluster) snapshot(id string) snapshotRef {
	c.t.Helper()
	data, errs := c.gql(c.member, `query($id: ID!) { sandboxSnapshot(id: $id) { id state stateReason sizeBytes sha256 } }`, map[string]any{"id": id})
	s, _ := data["sandboxSnapshot"].(map[string]any)
	if s == nil {
		if len(errs) == 0 {
			c.t.Fatalf("sandboxSnapshot(%s): no snapshot and no error", id)
		}
		return snapshotRef{}
	}
	ref := snapshotRef{id: s["id"].(string), state: s["state"].(string)}
	ref.reason, _ = s["stateReason"].(string)
	ref.sha256, _ = s["sha256"].(string)
	if n, ok := s["sizeBytes"].(float64); ok {
		ref.size = int64(n)
	}
	return ref
}

// settledSnapshot waits for a snapshot to leave PENDING and returns it.
func (c *cluster) settledSnapshot(id string, within time.Duration) snapshotRef {
	c.t.Helper()
	var ref snapshotRef
	testenv.Eventually(c.t, within, "snapshot "+id+" settled", func() bool {
		ref = c.snapshot(id)
		return ref.state != "PENDING"
	})
	return ref
}

// hostOf is the name of the host an instance is placed on.
func (c *cluster) hostOf(instance string) string {
	c.t.Helper()
	var name string
	if err := c.db.QueryRow(context.Background(), `SELECT h.name FROM instances i JOIN hosts h ON h.id = i.host_id WHERE i.id = $1`,
		decode(c.t, ids.Instance, instance)).Scan(&name); err != nil {
		c.t.Fatalf("host of %s: %v", instance, err)
	}
	return name
}

// commandStates lists the states of a snapshot's take command as the
// control plane recorded them: its state, and whether the host
// acknowledged it.
func (c *cluster) snapshotCommand(snapshot string) (state string, acknowledged bool) {
	c.t.Helper()
	if err := c.db.QueryRow(context.Background(), `SELECT h.state, h.acknowledged_at IS NOT NULL FROM sandbox_snapshots s
		JOIN host_commands h ON h.id = s.command_id WHERE s.id = $1`, decode(c.t, ids.SandboxSnapshot, snapshot)).Scan(&state, &acknowledged); err != nil {
		return "", false
	}
	return state, acknowledged
}

// hostDir is the state directory of the cluster's fake host name.
func (c *cluster) hostDir(name string) string {
	c.t.Helper()
	dir, ok := c.hostDirs[name]
	if !ok {
		c.t.Fatalf("no state directory of host %s", name)
	}
	return dir
}
