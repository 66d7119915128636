package reconciler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
)

// certifiedUntil gives a host a certificate valid until at (nil: none), as
// the gateway records the newest one it issued.
func (e *env) certifiedUntil(host uuid.UUID, at *time.Time) {
	e.t.Helper()
	_, err := e.db.Exec(context.Background(), "UPDATE hosts SET cert_not_after = $2 WHERE id = $1", host, at)
	e.check(err)
}

// certification reads what an instance records of its host's certificate.
func (e *env) certification(inst uuid.UUID) (bool, *time.Time) {
	e.t.Helper()
	var certified bool
	var before *time.Time
	e.check(e.db.QueryRow(context.Background(), "SELECT host_certified, host_cert_valid_before FROM instances WHERE id = $1", inst).Scan(&certified, &before))
	return certified, before
}

func in(d time.Duration) *time.Time {
	t := time.Now().Add(d).Truncate(time.Second)
	return &t
}

// TestPlacementRecordsCertification: the placing transition records
// whether the host is certified now, and until when: a host without a
// certificate, or with one expired, is not certified.
func TestPlacementRecordsCertification(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cases := []struct {
		name     string
		notAfter *time.Time
		want     bool
		instance uuid.UUID
	}{
		{name: "a host with a valid certificate", notAfter: in(30 * 24 * time.Hour), want: true},
		{name: "a host whose certificate expires soon", notAfter: in(time.Hour), want: true},
		{name: "a host without a certificate", notAfter: nil, want: false},
		{name: "a host whose certificate expired", notAfter: in(-time.Hour), want: false},
	}
	for i := range cases {
		c := &cases[i]
		e.poolWith(fmt.Sprintf("pool-%d", i), "spread", false)
		e.certifiedUntil(e.host(fmt.Sprintf("hv-%d", i), 4), c.notAfter)
		c.instance = e.create(fmt.Sprintf("vm-%d", i))
	}
	e.reconcilers(1, func(c *reconciler.Config) { c.HostSilentAfter = time.Hour })
	e.eventually(10*time.Second, "every instance placed", func() bool {
		return e.count("instances WHERE state = 'PROVISIONING'") == len(cases)
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			certified, before := e.certification(c.instance)
			switch {
			case certified != c.want:
				t.Fatalf("host_certified = %v, want %v", certified, c.want)
			case c.want && (before == nil || !before.Equal(*c.notAfter)):
				t.Fatalf("host_cert_valid_before = %v, want the host's cert_not_after %v", before, c.notAfter)
			case !c.want && before != nil:
				t.Fatalf("host_cert_valid_before = %v on an instance not certified", before)
			}
		})
	}
}

// TestRequireCertifiedHosts: a pool that requires certified hosts places
// only on a host whose certificate outlives the certified margin, skipping
// uncertified and soon-expiring hosts with room; with no such host with
// room, an instance stays PENDING saying so (not the ordinary no-room
// reason), and is placed once one has.
func TestRequireCertifiedHosts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: "attested", Class: vps.ClassHosted, RequireCertifiedHosts: true})
	e.check(err)
	e.ranged(p.ID)
	e.pool = p.ID
	plain := e.host("hv-plain", 8)
	soon := e.host("hv-soon", 8)
	e.certifiedUntil(soon, in(time.Hour))
	certified := e.host("hv-certified", 1)
	e.certifiedUntil(certified, in(30*24*time.Hour))
	first, second := e.create("vm-1"), e.create("vm-2")
	e.reconcilers(1, func(c *reconciler.Config) { c.HostSilentAfter = time.Hour })

	const reason = "no certified host in pool attested has room for 1 vCPUs, 1024 MiB, 10 GiB " +
		"(the pool requires a host certificate valid for 24h0m0s more; not certified or expiring sooner: hv-plain, hv-soon)"
	e.eventually(10*time.Second, "one placed on the certified host, the other PENDING with the reason", func() bool {
		return e.count("instances WHERE state = 'PROVISIONING' AND host_id = $1", certified) == 1 &&
			e.count("instances WHERE state = 'PENDING' AND state_reason = $1", reason) == 1
	})
	if n := e.count("allocations WHERE host_id IN ($1, $2) AND released_at IS NULL", plain, soon); n != 0 {
		t.Fatalf("%d allocations on the uncertified and soon-expiring hosts", n)
	}
	var waiting uuid.UUID
	e.check(e.db.QueryRow(context.Background(), "SELECT id FROM instances WHERE id IN ($1, $2) AND state = 'PENDING'", first, second).Scan(&waiting))

	renewed := in(30 * 24 * time.Hour)
	e.certifiedUntil(soon, renewed)
	e.eventually(10*time.Second, "the waiting instance placed on the renewed host", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'PROVISIONING' AND host_id = $2", waiting, soon) == 1
	})
	if ok, before := e.certification(waiting); !ok || before == nil || !before.Equal(*renewed) {
		t.Fatalf("placed with host_certified %v until %v, want certified until %v", ok, before, renewed)
	}
}

// TestCertificateLapse: an instance recorded as on a certified host whose
// certificate no longer stands — it expired, or the host's certificates
// were revoked — is marked not certified by the lapse pass, with an audit
// row (no principal, the reason) and its live UPDATED event; one whose
// certificate still stands, and a DELETED one, are left alone, and a lapse
// is reported once.
func TestCertificateLapse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	renewing, revoked := e.host("hv-renewing", 8), e.host("hv-revoked", 8)
	valid := in(30 * 24 * time.Hour)
	e.certifiedUntil(renewing, valid)
	// Running, certified until validBefore, as placement and the host's
	// reports would leave them.
	settle := func(name, state string, host uuid.UUID, validBefore *time.Time) uuid.UUID {
		id := e.create(name)
		_, err := e.db.Exec(context.Background(), `UPDATE instances SET state = $2, desired_state = CASE WHEN $2 = 'DELETED' THEN 'DELETED' ELSE 'RUNNING' END,
			host_id = $3, spec_power = 'running', observed_state = 'running', host_certified = true, host_cert_valid_before = $4 WHERE id = $1`,
			id, state, host, validBefore)
		e.check(err)
		return id
	}
	lapsedAt := in(-time.Minute)
	expired := settle("expired", "RUNNING", renewing, lapsedAt)
	standing := settle("standing", "RUNNING", renewing, valid)
	deleted := settle("deleted", "DELETED", renewing, lapsedAt)
	onRevoked := settle("on-revoked", "RUNNING", revoked, valid)

	sub := e.rdb.Subscribe(context.Background(), e.prefix+events.TenantChannel(e.tenant))
	defer sub.Close()
	if _, err := sub.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.reconcilers(1, func(c *reconciler.Config) { c.HostSilentAfter, c.LapseInterval = time.Hour, 50*time.Millisecond })

	e.eventually(10*time.Second, "the expired and the revoked instance marked not certified", func() bool {
		a, aUntil := e.certification(expired)
		b, bUntil := e.certification(onRevoked)
		return !a && aUntil == nil && !b && bUntil == nil
	})
	t.Run("their live events say so", func(t *testing.T) {
		want := map[string]bool{ids.Encode(ids.Instance, expired): true, ids.Encode(ids.Instance, onRevoked): true}
		deadline := time.After(10 * time.Second)
		for len(want) > 0 {
			select {
			case msg := <-sub.Channel():
				p, err := events.Decode([]byte(msg.Payload))
				if ev := p.Instance; err == nil && ev != nil && ev.Type == events.Updated && !ev.Instance.HostCertified {
					delete(want, ev.Instance.ID)
				}
			case <-deadline:
				t.Fatalf("no UPDATED event of the lapse of %v", want)
			}
		}
	})
	for _, c := range []struct {
		name     string
		instance uuid.UUID
		host     uuid.UUID
		until    *time.Time
		reason   string
	}{
		{"an audit row says it expired", expired, renewing, lapsedAt, "expired"},
		{"an audit row says it was revoked", onRevoked, revoked, valid, "revoked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var principal *uuid.UUID
			var tenant uuid.UUID
			var details []byte
			e.check(e.db.QueryRow(context.Background(), `SELECT principal_id, tenant_id, details FROM audit_events
				WHERE action = 'instance.host_certificate_lapsed' AND target_type = 'instance' AND target_id = $1 AND outcome = 'success'`, c.instance).
				Scan(&principal, &tenant, &details))
			var d struct {
				ValidBefore time.Time
				HostID      string
				Reason      string
			}
			e.check(json.Unmarshal(details, &d))
			if principal != nil || tenant != e.tenant || !d.ValidBefore.Equal(*c.until) || d.HostID != ids.Encode(ids.Host, c.host) || d.Reason != c.reason {
				t.Fatalf("audit row: principal %v, tenant %v, details %s", principal, tenant, details)
			}
		})
	}
	t.Run("others are left alone and a lapse is reported once", func(t *testing.T) {
		e.periodicRan("vps.certificate-lapses")
		if ok, _ := e.certification(standing); !ok {
			t.Error("an instance whose host's certificate stands was marked not certified")
		}
		if ok, _ := e.certification(deleted); !ok {
			t.Error("a DELETED instance was marked")
		}
		if n := e.count("audit_events WHERE action = 'instance.host_certificate_lapsed'"); n != 2 {
			t.Errorf("%d lapse audit rows, want 2", n)
		}
	})
}

// TestSnapshotCertification: a snapshot records whether the host that
// took it was certified, until when, as its instance records it when the
// snapshot becomes READY (the host's reports keep that current): a
// snapshot taken after a renewal has the new validity, an earlier one
// keeps its own, and one taken while the host reports by its bearer
// credential is not certified.
func TestSnapshotCertification(t *testing.T) {
	t.Parallel()
	e := setupSnapshots(t, 4, nil).reconcile(1, 100*time.Millisecond)
	var inst uuid.UUID
	e.check(e.db.QueryRow(context.Background(), "SELECT id FROM instances WHERE sandbox_id = $1", e.sandbox).Scan(&inst))
	record := func(certified bool, validBefore *time.Time) {
		t.Helper()
		_, err := e.db.Exec(context.Background(), "UPDATE instances SET host_certified = $2, host_cert_valid_before = $3 WHERE id = $1", inst, certified, validBefore)
		e.check(err)
	}
	snapshotCertification := func(snap uuid.UUID) (bool, *time.Time) {
		t.Helper()
		var certified bool
		var before *time.Time
		e.check(e.db.QueryRow(context.Background(), "SELECT host_certified, host_cert_valid_before FROM sandbox_snapshots WHERE id = $1", snap).Scan(&certified, &before))
		return certified, before
	}
	// taken takes a snapshot and settles it READY, checking it is not
	// certified while PENDING.
	taken := func(name string) uuid.UUID {
		t.Helper()
		snap := e.take(name)
		cmd := e.commandOf(snap, "command_id")
		if ok, _ := snapshotCertification(snap); ok {
			t.Fatalf("snapshot %s certified while PENDING", name)
		}
		e.finish(cmd, "SUCCEEDED", result, "", false, true)
		e.eventually(10*time.Second, "snapshot "+name+" READY", func() bool { return e.row(snap).state == "READY" })
		return snap
	}
	same := func(a, b *time.Time) bool { return a != nil && b != nil && a.Equal(*b) }

	first, renewed := in(30*24*time.Hour), in(37*24*time.Hour)
	e.certifiedUntil(e.hv, renewed) // its newest certificate, which the lapse pass checks against
	record(true, first)
	before := taken("before-renewal")
	record(true, renewed)
	after := taken("after-renewal")
	record(false, nil)
	bearer := taken("by-bearer")

	for _, c := range []struct {
		name      string
		snap      uuid.UUID
		certified bool
		until     *time.Time
	}{
		{"taken before the renewal", before, true, first},
		{"taken after the renewal", after, true, renewed},
		{"taken while the host reports by its bearer credential", bearer, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, until := snapshotCertification(c.snap)
			if ok != c.certified || (c.until == nil) != (until == nil) || (c.until != nil && !same(until, c.until)) {
				t.Fatalf("host_certified %v until %v, want %v until %v", ok, until, c.certified, c.until)
			}
		})
	}
}
