package doctor_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/doctor"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
)

// world is a deployment with one healthy hosted pool, host and instance,
// where each test builds the situation of a finding.
type world struct {
	t           *testing.T
	ctx         context.Context
	db          *pgxpool.Pool
	rdb         *redis.Client
	prefix      string
	svc         *control.Service
	sealer      *seal.Sealer
	tenant      uuid.UUID
	flavor      uuid.UUID
	image       uuid.UUID
	pool        uuid.UUID
	host        uuid.UUID
	runtimes    []string
	stuckAfter  time.Duration
	silentAfter time.Duration
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: iam.WithPrincipal(context.Background(), control.System), db: testenv.DB(t),
		runtimes: []string{vps.RuntimeLibvirtKVM, vps.RuntimeFake}, stuckAfter: time.Hour, silentAfter: time.Minute}
	w.rdb, w.prefix = testenv.Redis(t)
	w.sealer, _ = seal.New("current")
	w.svc = control.New(w.db, control.Config{Sealer: w.sealer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Runtimes: w.runtimes})
	tenant, err := w.svc.CreateTenant(w.ctx, "acme")
	w.must(err)
	w.tenant = tenant.ID
	flavor, err := w.svc.CreateFlavor(w.ctx, control.FlavorInput{Name: "one", Vcpus: 1, MemoryMB: 512, DiskGB: 5})
	w.must(err)
	w.flavor = flavor.ID
	img, err := w.svc.RegisterImage(w.ctx, control.ImageInput{Name: "img", SourceURL: "file:///i.raw", SHA256: strings.Repeat("b", 64), Format: "raw", Visibility: "public"})
	w.must(err)
	w.image = img.ID
	w.pool = w.hostedPool("fra1", "", true)
	w.host = w.adopt(w.pool, "hv-1", true)
	w.exec("UPDATE hosts SET last_seen_at = now() WHERE id = $1", w.host)
	w.instance(w.pool, "web")
	return w
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) exec(sql string, args ...any) {
	w.t.Helper()
	if _, err := w.db.Exec(context.Background(), sql, args...); err != nil {
		w.t.Fatal(err)
	}
}

// hostedPool creates a hosted pool of runtime (default the first listed),
// with an IP range when ranged.
func (w *world) hostedPool(name, runtime string, ranged bool) uuid.UUID {
	w.t.Helper()
	p, err := w.svc.CreatePool(w.ctx, control.PoolInput{Name: name, Class: vps.ClassHosted, Runtime: runtime})
	w.must(err)
	if ranged {
		_, err = w.svc.CreateIPPool(w.ctx, control.IPPoolInput{PoolID: p.ID, CIDR: "10.1.0.0/24", Gateway: "10.1.0.1", RangeStart: "10.1.0.10", RangeEnd: "10.1.0.20"})
		w.must(err)
	}
	return p.ID
}

func (w *world) adopt(pool uuid.UUID, name string, capacity bool) uuid.UUID {
	w.t.Helper()
	h, err := w.svc.CreateHost(w.ctx, pool, name)
	w.must(err)
	if capacity {
		_, err = w.svc.SetHostCapacity(w.ctx, control.HostCapacityInput{HostID: h.Host.ID, Vcpus: 8, MemoryMB: 8192, DiskGB: 100})
		w.must(err)
	}
	return h.Host.ID
}

func (w *world) instance(pool uuid.UUID, name string) uuid.UUID {
	w.t.Helper()
	inst, err := w.svc.CreateInstance(w.ctx, control.CreateInstanceInput{TenantID: w.tenant, PoolID: pool, FlavorID: w.flavor, ImageID: w.image,
		Name: name, SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl k"}, UserData: []byte("#cloud-config\n")})
	w.must(err)
	// Settled, as the reconciler would leave it.
	w.exec("UPDATE instances SET state = 'RUNNING', host_id = $2 WHERE id = $1", inst.ID, w.host)
	return inst.ID
}

// findings runs the doctor as the deployment is configured.
func (w *world) findings(configure ...func(*doctor.Doctor)) []doctor.Finding {
	w.t.Helper()
	d := doctor.New(doctor.Config{DB: w.db, Redis: w.rdb, Prefix: w.prefix, Runtimes: w.runtimes,
		HostSilentAfter: w.silentAfter, StuckAfter: w.stuckAfter, KeyID: w.sealer.KeyID()})
	for _, f := range configure {
		f(d)
	}
	found, err := d.Run(context.Background())
	w.must(err)
	return found
}

// expect checks that findings hold exactly one finding of code, of level,
// naming object, and returns it.
func expect(t *testing.T, findings []doctor.Finding, code string, level doctor.Level, object string) doctor.Finding {
	t.Helper()
	var match []doctor.Finding
	for _, f := range findings {
		if f.Code == code {
			match = append(match, f)
		}
	}
	if len(match) != 1 {
		t.Fatalf("want one %s finding, got %d: %+v", code, len(match), findings)
	}
	f := match[0]
	if f.Level != level || !slices.Contains(f.Objects, object) || f.Message == "" || f.Remedy == "" {
		t.Fatalf("%s finding = %+v, want level %s naming %s, with a message and a remedy", code, f, level, object)
	}
	return f
}

// A deployment whose one pool has a listed runtime, an IP range and a host
// with capacity that reports, running a settled instance, is healthy.
func TestHealthy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if found := w.findings(); len(found) != 0 {
		t.Fatalf("a healthy deployment has findings: %+v", found)
	}
}

func TestPoolFindings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)

	unlisted := w.hostedPool("fake-pool", vps.RuntimeFake, true)
	unranged := w.hostedPool("no-range", "", false)
	shared := w.hostedPool("containers", "", true)
	w.exec("UPDATE pools SET runtime = 'box' WHERE id = $1", shared)
	w.runtimes = []string{vps.RuntimeLibvirtKVM, "box"}
	boxShares := func(d *doctor.Doctor) { doctor.WithRuntimes(d, vps.Runtime{Name: "box", SharedKernel: true}) }

	found := w.findings(boxShares)
	t.Run("a pool whose runtime the deployment does not list", func(t *testing.T) {
		f := expect(t, found, "vps.pools.runtime", doctor.LevelError, ids.Encode(ids.Pool, unlisted))
		if !strings.Contains(f.Message, `"fake"`) {
			t.Errorf("the message does not name the runtime: %s", f.Message)
		}
	})
	t.Run("a pool without an IP range", func(t *testing.T) {
		expect(t, found, "vps.pools.ipam", doctor.LevelError, ids.Encode(ids.Pool, unranged))
	})
	t.Run("a pool whose runtime shares a kernel, not single-tenant", func(t *testing.T) {
		expect(t, found, "vps.pools.single-tenant", doctor.LevelError, ids.Encode(ids.Pool, shared))
		w.exec("UPDATE pools SET single_tenant = true WHERE id = $1", shared)
		for _, f := range w.findings(boxShares) {
			if f.Code == "vps.pools.single-tenant" {
				t.Fatalf("a single-tenant pool is still found: %+v", f)
			}
		}
	})
	if n := doctor.Errors(found); n != 3 {
		t.Errorf("Errors counts %d, want 3", n)
	}
}

func TestHostFindings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bare := w.adopt(w.pool, "hv-bare", false)
	silent := w.adopt(w.pool, "hv-silent", true)
	w.exec("UPDATE hosts SET last_seen_at = now() - interval '1 hour' WHERE id = $1", silent)

	found := w.findings()
	t.Run("an adopted host without capacity", func(t *testing.T) {
		expect(t, found, "vps.hosts.capacity", doctor.LevelWarning, ids.Encode(ids.Host, bare))
	})
	t.Run("a host silent past the timeout", func(t *testing.T) {
		expect(t, found, "vps.hosts.silent", doctor.LevelError, ids.Encode(ids.Host, silent))
	})
}

func TestInstanceFindings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	gone := w.instance(w.pool, "gone")
	w.exec(`INSERT INTO allocations (id, host_id, tenant_id, instance_id, vcpus, memory_mb, disk_gb) VALUES ($1, $2, $3, $4, 1, 512, 5)`, ids.New(), w.host, w.tenant, gone)
	w.exec(`INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id) SELECT $1, id, '10.1.0.11', '02:bc:0a:01:00:0b', $2 FROM ip_pools WHERE pool_id = $3`, ids.New(), gone, w.pool)
	w.exec(`INSERT INTO host_gpus (host_id, address, vendor, model) VALUES ($1, '0000:65:00.0', 'NVIDIA', 'L40S')`, w.host)
	w.exec(`INSERT INTO device_claims (id, host_id, address, instance_id) VALUES ($1, $2, '0000:65:00.0', $3)`, ids.New(), w.host, gone)
	w.exec(`UPDATE instances SET state = 'DELETED', desired_state = 'DELETED' WHERE id = $1`, gone)
	stuck := w.instance(w.pool, "stuck")
	w.exec(`UPDATE instances SET state = 'STARTING', updated_at = now() - interval '2 hours' WHERE id = $1`, stuck)

	found := w.findings()
	t.Run("allocations, device claims and IP leases held by a deleted instance", func(t *testing.T) {
		kinds := map[string]bool{}
		for _, f := range found {
			if f.Code == "vps.instances.held" && f.Level == doctor.LevelError && slices.Contains(f.Objects, ids.Encode(ids.Instance, gone)) {
				for _, k := range []string{"allocation", "device claim", "IP lease"} {
					if strings.HasSuffix(f.Message, " "+k) {
						kinds[k] = true
					}
				}
			}
		}
		if len(kinds) != 3 {
			t.Fatalf("held by the deleted instance: %v, want an allocation, a device claim and an IP lease: %+v", kinds, found)
		}
	})
	t.Run("an instance stuck in a transitional state", func(t *testing.T) {
		f := expect(t, found, "vps.instances.stuck", doctor.LevelWarning, ids.Encode(ids.Instance, stuck))
		if !strings.Contains(f.Message, "STARTING") {
			t.Errorf("the message does not name the state: %s", f.Message)
		}
	})
}

func TestWorkAndSecretFindings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// A value sealed under the previous secret: the service seals with
	// "previous", the doctor's current key is "current"'s.
	previous, _ := seal.New("previous")
	old := control.New(w.db, control.Config{Sealer: previous, Runtimes: w.runtimes, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.svc = old
	w.instance(w.pool, "sealed-before")
	dead := uuid.New()
	w.must(w.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: w.prefix + "work:dead", Values: []string{"topic", vps.TopicInstances, "key", dead.String(), "entry", "1-0"}}).Err())
	account := ids.New()
	w.exec(`INSERT INTO provider_accounts (id, provider, name, credentials_sealed) VALUES ($1, 'hetzner', 'ops', $2)`, account, mustSeal(t, w.sealer, account))
	w.exec(`INSERT INTO provider_orphans (account_id, server_id, instance_label) VALUES ($1, '4711', 'ins_x')`, account)

	found := w.findings()
	t.Run("a dead-lettered work entry", func(t *testing.T) {
		expect(t, found, "vps.work.dead-letters", doctor.LevelWarning, ids.Encode(ids.Instance, dead))
	})
	t.Run("a provider orphan not yet swept", func(t *testing.T) {
		f := expect(t, found, "vps.providers.orphans", doctor.LevelWarning, ids.Encode(ids.ProviderAccount, account))
		if !strings.Contains(f.Message, "4711") {
			t.Errorf("the message does not name the server: %s", f.Message)
		}
	})
	t.Run("a value sealed under a secret that is not the current one", func(t *testing.T) {
		var stale []doctor.Finding
		for _, f := range found {
			if f.Code == "vps.secrets.stale" {
				stale = append(stale, f)
			}
		}
		if len(stale) != 1 || stale[0].Level != doctor.LevelWarning || !strings.HasPrefix(stale[0].Message, "1 instance user data") {
			t.Fatalf("stale sealed values: %+v, want one warning of 1 instance user data", stale)
		}
	})
}

func mustSeal(t *testing.T, s *seal.Sealer, id uuid.UUID) []byte {
	t.Helper()
	return s.Seal([]byte(`{"token":"x"}`), id[:])
}

// TestCertificateFindings: a host holding instances whose certificate has
// lapsed is an error, one whose certificate expires within the certified
// margin a warning, each with how many instances it holds (and how many
// of them in pools that require certified hosts); a host renewed in time,
// or holding nothing, is not found.
func TestCertificateFindings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	certified := w.hostedPool("certified", "", true)
	w.exec("UPDATE pools SET require_certified_hosts = true WHERE id = $1", certified)
	lapsed := w.host
	w.instance(certified, "attested")
	w.exec("UPDATE hosts SET cert_not_after = now() - interval '1 hour' WHERE id = $1", lapsed)

	expiring := w.adopt(w.pool, "hv-expiring", true)
	w.host = expiring
	w.instance(w.pool, "soon")
	w.exec("UPDATE hosts SET cert_not_after = now() + interval '2 hours' WHERE id = $1", expiring)

	renewed := w.adopt(w.pool, "hv-renewed", true)
	w.host = renewed
	w.instance(w.pool, "fine")
	w.exec("UPDATE hosts SET cert_not_after = now() + interval '30 days' WHERE id = $1", renewed)

	empty := w.adopt(w.pool, "hv-empty", true)
	w.exec("UPDATE hosts SET cert_not_after = now() - interval '1 hour' WHERE id = $1", empty)
	w.exec("UPDATE hosts SET last_seen_at = now()")

	found := w.findings()
	var objects []string
	for _, f := range found {
		if f.Code == "vps.hosts.certificates" {
			objects = append(objects, f.Objects...)
		}
	}
	if want := []string{ids.Encode(ids.Host, lapsed), ids.Encode(ids.Host, expiring)}; !slices.Equal(objects, want) {
		t.Fatalf("hosts found for their certificate: %v, want the lapsed one and the expiring one %v", objects, want)
	}
	of := func(host uuid.UUID) doctor.Finding {
		for _, f := range found {
			if f.Code == "vps.hosts.certificates" && slices.Contains(f.Objects, ids.Encode(ids.Host, host)) {
				return f
			}
		}
		return doctor.Finding{}
	}
	t.Run("a lapsed certificate on a host holding instances", func(t *testing.T) {
		f := of(lapsed)
		if f.Level != doctor.LevelError || f.Remedy == "" || !strings.Contains(f.Message, "lapsed") || !strings.Contains(f.Message, "holds 2 instances (1 in pools that require certified hosts)") {
			t.Errorf("finding = %+v, want an error that it lapsed, with the counts", f)
		}
	})
	t.Run("a certificate expiring within the margin", func(t *testing.T) {
		f := of(expiring)
		if f.Level != doctor.LevelWarning || f.Remedy == "" || !strings.Contains(f.Message, "expires") || !strings.Contains(f.Message, "holds 1 instances (0 in") {
			t.Errorf("finding = %+v, want a warning that it expires, with the count", f)
		}
	})
	t.Run("a shorter margin leaves the expiring one out", func(t *testing.T) {
		d := doctor.New(doctor.Config{DB: w.db, Runtimes: w.runtimes, HostSilentAfter: w.silentAfter, StuckAfter: w.stuckAfter, CertifiedMargin: time.Hour})
		found, err := d.Run(context.Background())
		w.must(err)
		for _, f := range found {
			if f.Code == "vps.hosts.certificates" && slices.Contains(f.Objects, ids.Encode(ids.Host, expiring)) {
				t.Fatalf("found with a margin of 1h: %+v", f)
			}
		}
	})
}

// TestGPUFindings: a host whose GPUs a fatal Xid marked unhealthy is a
// warning naming the host, its devices with their Xids, and the instance
// holding one; healthy GPUs and a cleared mark are no finding.
func TestGPUFindings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	gpu := func(host uuid.UUID, address string) {
		w.exec("INSERT INTO host_gpus (host_id, address, vendor, model) VALUES ($1, $2, 'nvidia', 'A100')", host, address)
	}
	mark := func(host uuid.UUID, address string, xid int) {
		w.exec(`UPDATE host_gpus SET unhealthy_since = now(), health_reason = 'fatal Xid ' || $3::int, last_xid = $3, last_xid_at = now()
			WHERE host_id = $1 AND address = $2`, host, address, xid)
	}
	gpu(w.host, "0000:01:00.0")
	gpu(w.host, "0000:02:00.0")
	gpu(w.host, "0000:03:00.0")
	holder := w.instance(w.pool, "trainer")
	w.exec("INSERT INTO device_claims (id, host_id, address, instance_id) VALUES ($1, $2, '0000:01:00.0', $3)", ids.New(), w.host, holder)
	mark(w.host, "0000:01:00.0", 79)
	mark(w.host, "0000:02:00.0", 48)

	cleared := w.adopt(w.pool, "hv-cleared", true)
	gpu(cleared, "0000:01:00.0")
	mark(cleared, "0000:01:00.0", 94)
	w.exec("UPDATE host_gpus SET unhealthy_since = NULL, health_reason = NULL WHERE host_id = $1", cleared)
	w.exec("UPDATE hosts SET last_seen_at = now()")

	f := expect(t, w.findings(), "vps.hosts.gpus", doctor.LevelWarning, ids.Encode(ids.Host, w.host))
	inst := ids.Encode(ids.Instance, holder)
	if !slices.Contains(f.Objects, inst) {
		t.Errorf("objects %v do not name the holder %s", f.Objects, inst)
	}
	for _, want := range []string{"2 unhealthy GPUs, 1 held", "0000:01:00.0 (A100, Xid 79", "held by instance " + inst, "0000:02:00.0 (A100, Xid 48"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q does not say %q", f.Message, want)
		}
	}
	if strings.Contains(f.Message, "0000:03:00.0") {
		t.Errorf("message %q names a healthy GPU", f.Message)
	}
}
