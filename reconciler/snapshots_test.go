package reconciler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
)

// snapEnv is a RUNNING sandbox on host hv-1 and reconcilers that take and
// settle its snapshots; the host's side of commands is played by finish,
// as the gateway records a host's report.
type snapEnv struct {
	*env
	hv, template, sandbox uuid.UUID
}

// setupSnapshots makes the sandbox on a host speaking protocol (nil: the
// current one) with vcpus; reconcile starts the reconcilers.
func setupSnapshots(t *testing.T, vcpus int32, protocol *int16) *snapEnv {
	t.Helper()
	e := &snapEnv{env: setup(t)}
	if protocol == nil {
		e.hv = e.host("hv-1", vcpus)
	} else {
		e.hv = e.hostSpeaking("hv-1", vcpus, protocol)
	}
	tmpl, err := e.svc.CreateSandboxTemplate(e.ctx, control.SandboxTemplateInput{TenantID: e.tenant, Name: "py",
		PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image})
	e.check(err)
	e.template = tmpl.ID
	sbx, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: tmpl.ID})
	e.check(err)
	e.sandbox = sbx.ID
	// Placed by hand, as a reconciler would, and running, as its host
	// would report: the reconcilers start after.
	_, err = e.db.Exec(context.Background(), `INSERT INTO allocations (id, host_id, tenant_id, instance_id, vcpus, memory_mb, disk_gb)
		SELECT gen_random_uuid(), $2, tenant_id, id, vcpus, memory_mb, disk_gb FROM instances WHERE id = $1`, sbx.InstanceID, e.hv)
	e.check(err)
	_, err = e.db.Exec(context.Background(), "UPDATE instances SET state = 'RUNNING', host_id = $2, spec_power = 'running' WHERE id = $1", sbx.InstanceID, e.hv)
	e.check(err)
	return e
}

// reconcile starts n reconcilers whose sandbox loop runs every interval.
func (e *snapEnv) reconcile(n int, interval time.Duration) *snapEnv {
	e.reconcilers(n, func(c *reconciler.Config) {
		c.SandboxInterval, c.HostSilentAfter, c.SnapshotTimeout = interval, time.Minute, time.Minute
	})
	return e
}

// take snapshots the sandbox.
func (e *snapEnv) take(name string) uuid.UUID {
	e.t.Helper()
	snap, err := e.svc.CreateSandboxSnapshot(e.ctx, e.sandbox, name)
	e.check(err)
	return snap.ID
}

// commandOf waits for the snapshot's command of column (command_id or
// purge_command_id) to be queued, and returns it.
func (e *snapEnv) commandOf(snap uuid.UUID, column string) uuid.UUID {
	e.t.Helper()
	var id *uuid.UUID
	e.eventually(10*time.Second, "the snapshot's "+column, func() bool {
		e.check(e.db.QueryRow(context.Background(), "SELECT "+column+" FROM sandbox_snapshots WHERE id = $1", snap).Scan(&id))
		return id != nil
	})
	return *id
}

// snapshot reads a snapshot's state, reason, size and purged flag.
type snapRow struct {
	state, reason string
	size          *int64
	sha           *string
	purged        bool
	version       int64
}

func (e *snapEnv) row(id uuid.UUID) snapRow {
	e.t.Helper()
	var r snapRow
	e.check(e.db.QueryRow(context.Background(), "SELECT state, state_reason, size_bytes, sha256, purged, version FROM sandbox_snapshots WHERE id = $1", id).
		Scan(&r.state, &r.reason, &r.size, &r.sha, &r.purged, &r.version))
	return r
}

// loopRan waits for the sandbox loop to run twice more.
func (e *snapEnv) loopRan() {
	e.t.Helper()
	e.periodicRan("vps.sandboxes")
}

const result = `{"sizeBytes": 4096, "sha256": "` + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc" + `"}`

// TestSnapshotTakenOnce: two reconcilers and their sandbox loop queue one
// instance.snapshot command (lane bulk, deadline SnapshotTimeout ahead,
// naming the instance and the snapshot) on the sandbox's host, bumping its
// generation.
func TestSnapshotTakenOnce(t *testing.T) {
	t.Parallel()
	e := setupSnapshots(t, 8, nil).reconcile(2, 100*time.Millisecond)
	var gen int64
	e.check(e.db.QueryRow(context.Background(), "SELECT spec_generation FROM hosts WHERE id = $1", e.hv).Scan(&gen))
	snap := e.take("once")
	cmd := e.commandOf(snap, "command_id")
	e.loopRan()
	if n := e.count("host_commands WHERE host_id = $1", e.hv); n != 1 {
		t.Fatalf("%d commands queued, want 1", n)
	}
	var kind, lane, payload string
	var deadline time.Time
	var after int64
	e.check(e.db.QueryRow(context.Background(), "SELECT kind, lane, payload::text, deadline, (SELECT spec_generation FROM hosts WHERE id = host_id) FROM host_commands WHERE id = $1", cmd).
		Scan(&kind, &lane, &payload, &deadline, &after))
	if kind != "instance.snapshot" || lane != "bulk" || !strings.Contains(payload, `"snapshotId": "snp_`) || !strings.Contains(payload, `"instanceId": "ins_`) {
		t.Errorf("queued %s %s %s", kind, lane, payload)
	}
	if left := time.Until(deadline); left < 30*time.Second || left > time.Minute {
		t.Errorf("deadline %v ahead, want SnapshotTimeout (1m)", left)
	}
	if after <= gen {
		t.Errorf("host generation %d → %d, want bumped", gen, after)
	}
}

// TestSnapshotSettles: a snapshot settles from its command's end, each
// outcome as the table says, once: a second wake changes nothing. A
// FAILED one (over the bytes quota too) gets its files purged.
func TestSnapshotSettles(t *testing.T) {
	t.Parallel()
	e := setupSnapshots(t, 8, nil).reconcile(1, 100*time.Millisecond)
	cases := []struct {
		name, state, result, err string
		abandoned                bool
		quota                    int64
		want, reason             string
		purge                    bool
	}{
		{"succeeded", "SUCCEEDED", result, "", false, 0, "READY", "", false},
		{"failed", "FAILED", "", "disk full", false, 0, "FAILED", "disk full", true},
		{"past its deadline", "FAILED", "", "", true, 0, "FAILED", "deadline passed", true},
		{"over the bytes quota", "SUCCEEDED", result, "", false, 4095, "FAILED", "over the snapshot quota", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.quota > 0 {
				var used int64
				e.check(e.db.QueryRow(context.Background(), "SELECT coalesce(sum(size_bytes), 0) FROM sandbox_snapshots WHERE state = 'READY'").Scan(&used))
				limit := used + c.quota // bytes left: one short of the snapshot's
				_, err := e.svc.SetQuota(e.ctx, control.QuotaInput{TenantID: e.tenant, SnapshotBytes: &limit})
				e.check(err)
				defer func() { _, err := e.svc.SetQuota(e.ctx, control.QuotaInput{TenantID: e.tenant}); e.check(err) }()
			}
			snap := e.take(strings.ReplaceAll(c.name, " ", "-"))
			e.finish(e.commandOf(snap, "command_id"), c.state, c.result, c.err, c.abandoned, true)
			e.eventually(10*time.Second, "the snapshot to settle", func() bool { return e.row(snap).state != "PENDING" })
			var purge uuid.UUID
			if c.purge {
				// Queuing the purge is a step of its own after the
				// settle; the row is compared once both are done.
				purge = e.commandOf(snap, "purge_command_id")
			}
			got := e.row(snap)
			if got.state != c.want || !strings.HasPrefix(got.reason, c.reason) {
				t.Fatalf("settled %s (%s), want %s (%s)", got.state, got.reason, c.want, c.reason)
			}
			if c.want == "READY" && (got.size == nil || *got.size != 4096 || got.sha == nil) {
				t.Errorf("READY without its size and sha256: %+v", got)
			}
			if c.purge {
				if n := e.count("host_commands WHERE id = $1 AND kind = 'snapshot.purge' AND lane = 'interactive'", purge); n != 1 {
					t.Errorf("the purge is not an interactive snapshot.purge")
				}
			}
			cmd := e.commandOf(snap, "command_id")
			_, err := e.db.Exec(context.Background(), "INSERT INTO outbox (topic, key) VALUES ($1, $2)", vps.TopicCommands, cmd)
			e.check(err)
			e.loopRan()
			if again := e.row(snap); again.version != got.version || again.state != got.state {
				t.Errorf("a retried settle changed it: %+v → %+v", got, again)
			}
		})
	}
}

// TestSnapshotRefused: a host that speaks a protocol older than commands,
// or is gone, fails the snapshot with the reason, queues nothing, and
// leaves nothing to purge.
func TestSnapshotRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		protocol int16
		silent   bool
		reason   string
	}{
		{"too old", 2, false, "host hv-1 speaks host protocol 2; host commands need 3"},
		{"gone", 3, true, "host hv-1 is gone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setupSnapshots(t, 8, &c.protocol)
			snap := e.take("refused")
			if c.silent {
				_, err := e.db.Exec(context.Background(), "UPDATE hosts SET last_seen_at = now() - interval '2 hours' WHERE id = $1", e.hv)
				e.check(err)
			}
			e.reconcile(1, time.Hour)
			e.eventually(10*time.Second, "the snapshot to fail", func() bool { return e.row(snap).state == "FAILED" })
			if got := e.row(snap); !strings.HasPrefix(got.reason, c.reason) || !got.purged {
				t.Errorf("failed %+v, want reason %q and purged", got, c.reason)
			}
			if n := e.count("host_commands"); n != 0 {
				t.Errorf("%d commands queued", n)
			}
		})
	}
}

// TestPurgeAfterDelete: a snapshot deleted while PENDING is purged only
// once its take has ended, and is purged when the host confirms; a failed
// purge is queued again by the sandbox loop.
func TestPurgeAfterDelete(t *testing.T) {
	t.Parallel()
	e := setupSnapshots(t, 8, nil).reconcile(1, 100*time.Millisecond)
	snap := e.take("deleted")
	take := e.commandOf(snap, "command_id")
	_, err := e.svc.DeleteSandboxSnapshot(e.ctx, snap)
	e.check(err)
	e.loopRan()
	if n := e.count("host_commands WHERE kind = 'snapshot.purge'"); n != 0 {
		t.Fatalf("a purge queued while the take runs")
	}
	e.finish(take, "SUCCEEDED", result, "", false, true)
	first := e.commandOf(snap, "purge_command_id")
	e.finish(first, "FAILED", "", "busy", false, true)
	var second uuid.UUID
	e.eventually(10*time.Second, "a second purge", func() bool {
		var id *uuid.UUID
		e.check(e.db.QueryRow(context.Background(), "SELECT purge_command_id FROM sandbox_snapshots WHERE id = $1", snap).Scan(&id))
		if id != nil && *id != first {
			second = *id
		}
		return second != uuid.Nil
	})
	e.finish(second, "SUCCEEDED", "", "", false, true)
	e.eventually(10*time.Second, "the snapshot to be purged", func() bool { return e.row(snap).purged })
	if got := e.row(snap); got.state != "READY" {
		t.Errorf("a deleted snapshot settled %s, want READY (deleted: no quota check)", got.state)
	}
}

// TestLostWakeSettledByLoop: a command that ended without its wake (the
// gateway's outbox row lost) is settled by the sandbox loop.
func TestLostWakeSettledByLoop(t *testing.T) {
	t.Parallel()
	e := setupSnapshots(t, 8, nil).reconcile(1, 100*time.Millisecond)
	snap := e.take("lost")
	e.finish(e.commandOf(snap, "command_id"), "SUCCEEDED", result, "", false, false)
	e.eventually(10*time.Second, "the loop to settle it", func() bool { return e.row(snap).state == "READY" })
}

// TestTenantDeletionPurges: deleting a tenant purges every snapshot of
// its on their host.
func TestTenantDeletionPurges(t *testing.T) {
	t.Parallel()
	e := setupSnapshots(t, 8, nil).reconcile(1, time.Hour)
	snaps := []uuid.UUID{e.take("a"), e.take("b")}
	for _, s := range snaps {
		e.finish(e.commandOf(s, "command_id"), "SUCCEEDED", result, "", false, true)
	}
	_, err := e.svc.DeleteTenant(e.ctx, e.tenant)
	e.check(err)
	for _, s := range snaps {
		e.finish(e.commandOf(s, "purge_command_id"), "SUCCEEDED", "", "", false, true)
	}
	e.eventually(10*time.Second, "every snapshot purged", func() bool {
		return e.count("sandbox_snapshots WHERE tenant_id = $1 AND deleted_at IS NOT NULL AND purged", e.tenant) == 2
	})
}

// TestRestorePlacement: a restore is placed only on its snapshot's host,
// though another host has more room; when that host is full it waits
// PENDING with a reason naming it, and is placed there once room frees.
func TestRestorePlacement(t *testing.T) {
	t.Parallel()
	e := setupSnapshots(t, 2, nil).reconcile(1, time.Hour)
	e.host("hv-2", 64)
	snap := e.take("base")
	e.finish(e.commandOf(snap, "command_id"), "SUCCEEDED", result, "", false, true)
	e.eventually(10*time.Second, "READY", func() bool { return e.row(snap).state == "READY" })

	restore := func() uuid.UUID {
		sbx, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, FromSnapshot: &snap})
		e.check(err)
		return sbx.InstanceID
	}
	hostOf := func(inst uuid.UUID) (host *uuid.UUID, reason string) {
		e.check(e.db.QueryRow(context.Background(), "SELECT host_id, state_reason FROM instances WHERE id = $1", inst).Scan(&host, &reason))
		return host, reason
	}
	first := restore()
	e.eventually(10*time.Second, "the first restore placed", func() bool { h, _ := hostOf(first); return h != nil })
	if h, _ := hostOf(first); *h != e.hv {
		t.Fatalf("a restore placed on another host than its snapshot's")
	}
	second := restore() // hv-1 has 2 vCPUs: the sandbox's and the first restore's
	want := "whose files are on host hv-1, which has no room"
	e.eventually(10*time.Second, "the second restore to wait", func() bool { _, r := hostOf(second); return strings.Contains(r, want) })
	if h, _ := hostOf(second); h != nil {
		t.Fatalf("placed on a full host")
	}
	_, err := e.svc.SetHostCapacity(e.ctx, control.HostCapacityInput{HostID: e.hv, Vcpus: 4, MemoryMB: 4 * 4096, DiskGB: 1000})
	e.check(err)
	e.eventually(10*time.Second, "the second restore placed once room frees", func() bool { h, _ := hostOf(second); return h != nil && *h == e.hv })
}

// TestSharedStoreRestorePlacement: in a pool whose hosts share one
// snapshot store a restore whose snapshot's host is full is placed on
// another live host of the pool that speaks protocol 3, and waits naming
// the hosts too old when none does; in a pool that does not share, it
// waits for the snapshot's host.
func TestSharedStoreRestorePlacement(t *testing.T) {
	t.Parallel()
	current, old := int16(3), int16(2)
	for _, c := range []struct {
		name     string
		shared   bool
		protocol int16 // hv-2's
		placed   bool
		reason   string
	}{
		{"shared", true, current, true, ""},
		{"shared, the other host too old", true, old, false, "no live host in pool fra1 has room for 1 vCPUs, 1024 MiB, 10 GiB and speaks host protocol 3 or later (older: hv-2)"},
		{"not shared", false, current, false, "whose files are on host hv-1, which has no room"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setupSnapshots(t, 1, nil).reconcile(1, time.Hour) // the sandbox fills hv-1
			other := e.hostSpeaking("hv-2", 64, &c.protocol)
			_, err := e.svc.SetPoolSharedSnapshotStore(e.ctx, e.pool, c.shared)
			e.check(err)
			snap := e.take("base")
			e.finish(e.commandOf(snap, "command_id"), "SUCCEEDED", result, "", false, true)
			e.eventually(10*time.Second, "READY", func() bool { return e.row(snap).state == "READY" })

			sbx, err := e.svc.CreateSandbox(e.ctx, control.CreateSandboxInput{TenantID: e.tenant, FromSnapshot: &snap})
			e.check(err)
			var host *uuid.UUID
			var reason string
			e.eventually(10*time.Second, "the restore placed or waiting", func() bool {
				e.check(e.db.QueryRow(context.Background(), "SELECT host_id, state_reason FROM instances WHERE id = $1", sbx.InstanceID).Scan(&host, &reason))
				return host != nil || reason != ""
			})
			switch {
			case c.placed && (host == nil || *host != other):
				t.Fatalf("placed on %v (%q), want hv-2", host, reason)
			case !c.placed && (host != nil || !strings.Contains(reason, c.reason)):
				t.Fatalf("placed on %v, waiting %q; want waiting %q", host, reason, c.reason)
			}
		})
	}
}

// TestSharedStorePurge: a deleted snapshot is purged on its own host
// while it is live; when it is gone, on another live host of its pool if
// the pool's hosts share one snapshot store, else not until it is back.
func TestSharedStorePurge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		shared, gone bool
		purgedOn     string // "" when no purge is queued
	}{
		{"own host live", true, false, "hv-1"},
		{"own host gone, shared", true, true, "hv-2"},
		{"own host gone, not shared", false, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setupSnapshots(t, 8, nil).reconcile(1, 100*time.Millisecond)
			hosts := map[string]uuid.UUID{"hv-1": e.hv, "hv-2": e.host("hv-2", 8)}
			_, err := e.svc.SetPoolSharedSnapshotStore(e.ctx, e.pool, c.shared)
			e.check(err)
			snap := e.take("purged")
			e.finish(e.commandOf(snap, "command_id"), "SUCCEEDED", result, "", false, true)
			e.eventually(10*time.Second, "READY", func() bool { return e.row(snap).state == "READY" })
			if c.gone {
				_, err := e.db.Exec(context.Background(), "UPDATE hosts SET last_seen_at = now() - interval '2 hours' WHERE id = $1", e.hv)
				e.check(err)
			}
			_, err = e.svc.DeleteSandboxSnapshot(e.ctx, snap)
			e.check(err)
			if c.purgedOn == "" {
				e.loopRan()
				if n := e.count("host_commands WHERE kind = 'snapshot.purge'"); n != 0 {
					t.Fatalf("%d purges queued with no host to run them", n)
				}
				return
			}
			purge := e.commandOf(snap, "purge_command_id")
			if n := e.count("host_commands WHERE id = $1 AND host_id = $2", purge, hosts[c.purgedOn]); n != 1 {
				t.Fatalf("the purge is not queued on %s", c.purgedOn)
			}
			e.finish(purge, "SUCCEEDED", "", "", false, true)
			e.eventually(10*time.Second, "the snapshot purged", func() bool { return e.row(snap).purged })
		})
	}
}
