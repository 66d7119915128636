package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
)

type env struct {
	t          testing.TB
	gw         *gateway.Gateway
	db         *pgxpool.Pool
	rdb        *redis.Client
	prefix     string
	url        string
	host       uuid.UUID
	credential string
	instance   uuid.UUID
	// svc made the tenant, pool, flavor and image the instance is of.
	svc                         *control.Service
	tenant, pool, flavor, image uuid.UUID
}

func setup(t testing.TB, configure ...func(*gateway.Config)) *env {
	db := testenv.DB(t)
	rdb, prefix := testenv.Redis(t)
	sealer, _ := seal.New("test")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := control.New(db, control.Config{Sealer: sealer, Logger: log})
	ctx := iam.WithPrincipal(context.Background(), control.System)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tenant, err := svc.CreateTenant(ctx, "acme")
	must(err)
	pool, err := svc.CreatePool(ctx, control.PoolInput{Name: "fra1", Class: vps.ClassHosted})
	must(err)
	_, err = svc.CreateIPPool(ctx, control.IPPoolInput{PoolID: pool.ID, CIDR: "10.1.0.0/24", Gateway: "10.1.0.1", RangeStart: "10.1.0.10", RangeEnd: "10.1.0.20", DNS: []string{"9.9.9.9"}})
	must(err)
	flavor, err := svc.CreateFlavor(ctx, control.FlavorInput{Name: "one", Vcpus: 1, MemoryMB: 512, DiskGB: 5})
	must(err)
	img, err := svc.RegisterImage(ctx, control.ImageInput{Name: "img", SourceURL: "file:///i.raw", SHA256: strings.Repeat("b", 64), Format: "raw", Visibility: "public"})
	must(err)
	host, err := svc.CreateHost(ctx, pool.ID, "hv-1")
	must(err)
	inst, err := svc.CreateInstance(ctx, control.CreateInstanceInput{TenantID: tenant.ID, PoolID: pool.ID, FlavorID: flavor.ID, ImageID: img.ID,
		Name: "web", SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl k"}, UserData: []byte("#cloud-config\n")})
	must(err)

	cfg := gateway.Config{DB: db, Redis: rdb, Prefix: prefix, Sealer: sealer, Logger: log}
	for _, f := range configure {
		f(&cfg)
	}
	gw := gateway.New(cfg)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { gw.Run(runCtx); close(done) }()
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	return &env{t: t, db: db, rdb: rdb, prefix: prefix, url: srv.URL, host: host.Host.ID, credential: host.Credential, instance: inst.ID, gw: gw,
		svc: svc, tenant: tenant.ID, pool: pool.ID, flavor: flavor.ID, image: img.ID}
}

func (e *env) request(method, path, credential string, body any) *http.Response {
	e.t.Helper()
	return e.requestAt(hostproto.Version, method, path, credential, body)
}

// requestAt makes a request as a host daemon of protocol version would:
// its header says version.
func (e *env) requestAt(version int, method, path, credential string, body any) *http.Response {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, e.url+path, r)
	req.Header.Set(hostproto.Header, strconv.Itoa(version))
	req.Header.Set("Authorization", "Bearer "+credential)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (e *env) spec(after int64, wait int) (hostproto.NodeSpec, int) {
	e.t.Helper()
	resp := e.request("GET", hostproto.SpecPath+"?after="+strconv.FormatInt(after, 10)+"&wait="+strconv.Itoa(wait), e.credential, nil)
	var spec hostproto.NodeSpec
	if resp.StatusCode == 200 {
		json.NewDecoder(resp.Body).Decode(&spec)
	}
	return spec, resp.StatusCode
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatal(err)
	}
}

// place puts the instance in the host's spec at the next generation, as
// the reconciler would, and wakes the host.
func (e *env) place(power string) int64 {
	e.t.Helper()
	var gen int64
	e.db.QueryRow(context.Background(), "UPDATE hosts SET spec_generation = spec_generation + 1 WHERE id = $1 RETURNING spec_generation", e.host).Scan(&gen)
	e.exec(`INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id) SELECT $1, id, '10.1.0.10', '02:bc:0a:01:00:0a', $2 FROM ip_pools`, ids.New(), e.instance)
	e.exec(`INSERT INTO host_gpus (host_id, address, vendor, model) VALUES ($1, '0000:65:00.0', 'NVIDIA', 'L40S') ON CONFLICT DO NOTHING`, e.host)
	e.exec(`INSERT INTO device_claims (id, host_id, address, instance_id) VALUES ($1, $2, '0000:65:00.0', $3)`, ids.New(), e.host, e.instance)
	e.exec(`UPDATE instances SET host_id = $1, spec_power = $2, spec_generation = $3, state = 'PROVISIONING', observed_state = NULL WHERE id = $4`, e.host, power, gen, e.instance)
	e.rdb.Publish(context.Background(), e.prefix+events.HostChannel(e.host), "")
	return gen
}

func TestSpec(t *testing.T) {
	t.Parallel()
	e := setup(t)

	t.Run("a new host gets its spec at once", func(t *testing.T) {
		spec, code := e.spec(0, 5)
		if code != 200 || spec.Generation != 1 || len(spec.Instances) != 0 || spec.HostID != ids.Encode(ids.Host, e.host) {
			t.Fatalf("%d %+v", code, spec)
		}
	})
	t.Run("nothing new: 204 after the wait", func(t *testing.T) {
		if _, code := e.spec(1, 0); code != 204 {
			t.Fatalf("status %d", code)
		}
	})
	t.Run("a change wakes the long-poll", func(t *testing.T) {
		got := make(chan hostproto.NodeSpec, 1)
		go func() { s, _ := e.spec(1, 25); got <- s }()
		// The change comes once the long-poll waits; the spec it returns
		// proves it woke for the change, not the timeout.
		testenv.Eventually(t, 5*time.Second, "the long-poll to wait", func() bool { return e.gw.Waiting() == 1 })
		start := time.Now()
		gen := e.place("running")
		select {
		case spec := <-got:
			if spec.Generation != gen || len(spec.Instances) != 1 {
				t.Fatalf("spec = %+v", spec)
			}
			is := spec.Instances[0]
			if is.Power != "running" || is.UserData != "#cloud-config\n" || is.Network == nil || is.Network.Address != "10.1.0.10/24" ||
				is.Network.Gateway != "10.1.0.1" || is.Network.DNS[0] != "9.9.9.9" || is.Network.MAC != "02:bc:0a:01:00:0a" || is.Image.Format != "raw" ||
				len(is.GPUs) != 1 || is.GPUs[0].Address != "0000:65:00.0" {
				t.Fatalf("instance spec = %+v (network %+v)", is, is.Network)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("woken %v after the change: that was the timeout", took)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the long-poll did not wake")
		}
	})
	t.Run("refuses strangers", func(t *testing.T) {
		if code := e.request("GET", hostproto.SpecPath, "bch_wrong", nil).StatusCode; code != 401 {
			t.Fatalf("wrong credential: %d", code)
		}
		req, _ := http.NewRequest("GET", e.url+hostproto.SpecPath, nil)
		req.Header.Set("Authorization", "Bearer "+e.credential)
		resp, _ := http.DefaultClient.Do(req)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("no protocol header: %d", resp.StatusCode)
		}
	})
}

func TestReport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := e.place("running")
	id := ids.Encode(ids.Instance, e.instance)
	observed := func() string {
		var s *string
		e.db.QueryRow(context.Background(), "SELECT observed_state FROM instances WHERE id = $1", e.instance).Scan(&s)
		if s == nil {
			return ""
		}
		return *s
	}
	post := func(g int64, st []hostproto.InstanceStatus, inv *hostproto.Inventory) {
		t.Helper()
		resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: g, Instances: st, Inventory: inv})
		if resp.StatusCode != 204 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("report: %d %s", resp.StatusCode, b)
		}
	}
	outbox := func() int {
		var n int
		e.db.QueryRow(context.Background(), "SELECT count(*) FROM outbox WHERE key = $1 AND payload IS NULL", e.instance).Scan(&n)
		return n
	}

	t.Run("the first report adopts the inventory", func(t *testing.T) {
		post(gen-1, nil, &hostproto.Inventory{Vcpus: 16, MemoryMB: 32768, DiskGB: 500, GPUs: []hostproto.GPU{{Address: "0000:65:00.0", Vendor: "NVIDIA", Model: "L40S"}}})
		var vcpus, gpus int
		e.db.QueryRow(context.Background(), "SELECT vcpus FROM host_capacity WHERE host_id = $1", e.host).Scan(&vcpus)
		e.db.QueryRow(context.Background(), "SELECT count(*) FROM host_gpus WHERE host_id = $1", e.host).Scan(&gpus)
		if vcpus != 16 || gpus != 1 {
			t.Fatalf("capacity %d vCPUs, %d GPUs", vcpus, gpus)
		}
	})
	t.Run("a report older than the instance's entry changes nothing", func(t *testing.T) {
		before := outbox()
		post(gen-1, []hostproto.InstanceStatus{{ID: id, State: hostproto.StateStopped}}, nil)
		if got := observed(); got != "" {
			t.Fatalf("observed = %q after a stale report", got)
		}
		if outbox() != before {
			t.Fatal("a stale report woke the reconciler for the instance")
		}
	})
	t.Run("a current report is recorded and wakes the reconciler", func(t *testing.T) {
		before := outbox()
		post(gen, []hostproto.InstanceStatus{{ID: id, State: hostproto.StateRunning}}, nil)
		if got := observed(); got != "running" {
			t.Fatalf("observed = %q", got)
		}
		if outbox() != before+1 {
			t.Fatal("the reconciler was not woken")
		}
		post(gen, []hostproto.InstanceStatus{{ID: id, State: hostproto.StateRunning}}, nil)
		if outbox() != before+1 {
			t.Fatal("an unchanged observation woke the reconciler again")
		}
	})
	t.Run("an instance missing from a current report is absent", func(t *testing.T) {
		post(gen, nil, nil)
		if got := observed(); got != "absent" {
			t.Fatalf("observed = %q", got)
		}
	})
	t.Run("bad reports are refused", func(t *testing.T) {
		if code := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: 9}).StatusCode; code != 400 {
			t.Fatalf("protocol 9: %d", code)
		}
	})
}

// post posts a raw report body.
func (e *env) post(body string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.url+hostproto.ReportPath, strings.NewReader(body))
	req.Header.Set(hostproto.Header, strconv.Itoa(hostproto.Version))
	req.Header.Set("Authorization", "Bearer "+e.credential)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}
