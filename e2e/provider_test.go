package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud/cloudtest"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/drivers/cloud/proxmox"
	"github.com/better-compute/vps/drivers/cloud/proxmox/proxmoxtest"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// cloud is an emulated provider a test runs a provider pool on, through the
// real driver in the real reconcile process.
type cloud struct {
	// kind is the GraphQL ProviderKind; mapping is what flavors and images
	// are called there.
	kind        string
	credentials string
	settings    map[string]any
	serverType  string
	image       string
	faults      *cloudtest.Injector
	// servers lists what the provider has: server ID → our label.
	servers func() map[string]string
	// remove deletes a server behind our back; add makes one with a label.
	remove func(id string)
	add    func(label string)
	// limit sets how many servers the account may have; refusal is how the
	// provider's refusal beyond it starts.
	limit   func(n int)
	refusal string
	// block, while set, holds every create after the provider served it.
	block func(hold func())
	// before and after, while set, are called with each request before
	// the provider serves it and after (before its reply is sent).
	before, after func(hook func(*http.Request))
	// served counts the replies with a status code.
	served func(code int) int
	// arrivedWithin: see holder.
	arrivedWithin func(wait, margin time.Duration) int
	// addresses: the provider tells its servers' public addresses.
	addresses bool
	// listRoute is the call that lists servers (cloudtest.Route's form).
	listRoute string
	// wrongCredentials are refused by the provider.
	wrongCredentials string
	// bootstrapType is a server type a provider bootstrap may name.
	bootstrapType string
	// machines lists the provider bootstraps' machines.
	machines func() []machine
}

// machine is a provider bootstrap's machine as its provider has it.
type machine struct {
	id, bootstrap, name string
	// userData is what the provider hands the machine's cloud-init;
	// seedURL is the NoCloud seed its SMBIOS serial points at.
	userData, seedURL string
}

// holder wraps an emulator's handler: it counts the status codes served
// and, while hold is set, stalls replies to creates after the emulator
// made the server.
type holder struct {
	mu       sync.Mutex
	hold     func()
	before   func(*http.Request)
	after    func(*http.Request)
	statuses map[int]int
	// arrivals are when requests came, and limited when 429s were sent.
	arrivals, limited []time.Time
}

func (h *holder) wrap(isCreate func(*http.Request) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		h.mu.Lock()
		before := h.before
		h.mu.Unlock()
		if before != nil {
			before(r)
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		h.mu.Lock()
		hold, after := h.hold, h.after
		if h.statuses == nil {
			h.statuses = map[int]int{}
		}
		h.statuses[rec.Code]++
		h.arrivals = append(h.arrivals, arrived)
		if rec.Code == http.StatusTooManyRequests {
			h.limited = append(h.limited, time.Now())
		}
		h.mu.Unlock()
		if hold != nil && isCreate(r) {
			hold()
		}
		if after != nil {
			after(r)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

func (h *holder) set(hold func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold = hold
}

func (h *holder) setBefore(hook func(*http.Request)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before = hook
}

func (h *holder) setAfter(hook func(*http.Request)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.after = hook
}

// arrivedWithin counts the requests that came while a 429 sent earlier
// asked to wait (from margin after it until wait has passed): requests
// already in flight when the 429 went out may arrive within the margin.
func (h *holder) arrivedWithin(wait, margin time.Duration) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, at := range h.arrivals {
		for _, l := range h.limited {
			if at.After(l.Add(margin)) && at.Before(l.Add(wait)) {
				n++
				break
			}
		}
	}
	return n
}

func (h *holder) served(code int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.statuses[code]
}

func hetznerCloud(t testing.TB) *cloud {
	return hetznerCloudWith(t, hetznertest.Config{RateLimit: 100_000, RefillPerSecond: 1000})
}

func hetznerCloudWith(t testing.TB, cfg hetznertest.Config) *cloud {
	const token = "hcloud-e2e-token-SECRET-4242424242424242424242"
	cfg.Token, cfg.ActionDuration = token, 20*time.Millisecond
	em := hetznertest.New(cfg)
	h := &holder{}
	srv := httptest.NewServer(h.wrap(func(r *http.Request) bool { return r.Method == "POST" && r.URL.Path == "/v1/servers" }, em.Handler()))
	t.Cleanup(srv.Close)
	return &cloud{
		kind: "HETZNER", credentials: token, addresses: true, listRoute: "GET /v1/servers",
		wrongCredentials: "hcloud-WRONG-token-SECRET-7777777777777777777777",
		settings:         map[string]any{"endpoint": srv.URL + "/v1", "location": "fsn1"},
		serverType:       "cx22", image: "debian-12",
		faults: em.Faults(),
		servers: func() map[string]string {
			out := map[string]string{}
			for _, s := range em.Servers() {
				out[fmt.Sprint(s.ID)] = s.Labels["better-compute-instance"]
			}
			return out
		},
		remove: func(id string) {
			var n int64
			fmt.Sscan(id, &n)
			em.DeleteServer(n)
		},
		add: func(label string) {
			if _, err := em.AddServer("made-by-hand-"+label[:8], map[string]string{"better-compute-instance": label}); err != nil {
				t.Fatal(err)
			}
		},
		bootstrapType: "cx22",
		machines: func() []machine {
			var out []machine
			for _, s := range em.Servers() {
				if id := s.Labels["better-compute-bootstrap"]; id != "" {
					out = append(out, machine{id: fmt.Sprint(s.ID), bootstrap: id, name: s.Name, userData: s.UserData})
				}
			}
			return out
		},
		limit: em.SetServerLimit, refusal: "server limit reached",
		block: h.set, before: h.setBefore, after: h.setAfter,
		served: h.served, arrivedWithin: h.arrivedWithin,
	}
}

func proxmoxCloud(t testing.TB) *cloud {
	const tokenID, secret = "root@pam!e2e", "0b7e4c1a-SECRET-4f5e-9d2a-5c3b1e0f9a77"
	em := proxmoxtest.New(proxmoxtest.Config{TokenID: tokenID, Secret: secret, TaskDuration: 20 * time.Millisecond})
	h := &holder{}
	srv := httptest.NewServer(h.wrap(func(r *http.Request) bool { return r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/clone") }, em.Handler()))
	t.Cleanup(srv.Close)
	return &cloud{
		kind: "PROXMOX", credentials: tokenID + "=" + secret, listRoute: "GET /api2/json/cluster/resources",
		wrongCredentials: tokenID + "=ffffffff-WRONG-SECRET-0000-777777777777",
		settings:         map[string]any{"endpoint": srv.URL + "/api2/json", "node": "pve", "storage": "local-lvm", "template": proxmoxtest.DefaultTemplate},
		serverType:       "", image: fmt.Sprint(proxmoxtest.DefaultTemplate),
		faults: em.Faults(),
		servers: func() map[string]string {
			out := map[string]string{}
			for _, v := range em.VMs() {
				if !v.Template {
					label, _ := proxmox.InstanceID(v.Name)
					out[fmt.Sprint(v.VMID)] = label
				}
			}
			return out
		},
		remove: func(id string) {
			var n int
			fmt.Sscan(id, &n)
			em.DeleteVM(n)
		},
		add: func(label string) {
			name, _ := proxmox.VMName(label)
			em.AddVM(name, []string{proxmox.Tag})
		},
		bootstrapType: "2x2048",
		machines: func() []machine {
			var out []machine
			for _, v := range em.VMs() {
				if id, ok := proxmox.BootstrapID(v.Name); ok && slices.Contains(v.Tags, proxmox.BootstrapTag) {
					seed, _ := proxmox.SeedFromSMBIOS(v.Config["smbios1"])
					out = append(out, machine{id: fmt.Sprint(v.VMID), bootstrap: id, name: v.Name, seedURL: seed})
				}
			}
			return out
		},
		limit: em.SetMaxVMs, refusal: "clone failed: quota exceeded",
		block: h.set, before: h.setBefore, after: h.setAfter,
		served: h.served, arrivedWithin: h.arrivedWithin,
	}
}

// providerArgs are the reconcile flags of clusters with provider pools: fast
// sweeps and short timeouts.
var providerArgs = []string{
	"--sweep-interval", "200ms", "--orphan-grace", "1s", "--provider-poll", "20ms", "--shutdown-timeout", "2s", "--provider-timeout", "1s",
}

// providerCluster starts a control plane whose tenant has a provider
// account on cl and a pool on it, and points c.create at that pool.
func providerCluster(t testing.TB, cl *cloud, reconcilers int) *cluster {
	c := start(t, options{reconcilers: reconcilers, reconcileArgs: providerArgs})
	c.providerPool(cl, "cloud", cl.credentials)
	c.cloudCatalog(cl)
	return c
}

// cloudCatalog makes a flavor and an image that the clouds have a
// counterpart of, and points c.create at them.
func (c *cluster) cloudCatalog(clouds ...*cloud) {
	c.t.Helper()
	types, images := map[string]any{}, map[string]any{}
	for _, cl := range clouds {
		kind := strings.ToLower(cl.kind)
		if cl.serverType != "" {
			types[kind] = cl.serverType
		}
		images[kind] = cl.image
	}
	c.flavor = c.must(c.operator, `mutation($m: Map) { createFlavor(input: {name: "cloud-small", vcpus: 2, memoryMb: 2048, diskGb: 20, providerServerTypes: $m}) { flavor { id } } }`,
		map[string]any{"m": types}, "createFlavor", "flavor", "id")
	c.image = c.must(c.operator, `mutation($m: Map) { registerImage(input: {name: "cloud-debian", sourceUrl: "file:///images/debian.qcow2", sha256: "`+strings.Repeat("d", 64)+`", format: QCOW2, visibility: PUBLIC, verified: true, providerImages: $m}) { image { id } } }`,
		map[string]any{"m": images}, "registerImage", "image", "id")
}

// providerPool registers the tenant's account on cl with credentials, makes
// a pool named name on it, points c.create at the pool and returns the
// account's ID.
func (c *cluster) providerPool(cl *cloud, name, credentials string) string {
	c.t.Helper()
	acct, pool := c.providerPoolOf(c.tenant, c.member, cl, name, credentials)
	c.pool = pool
	return acct
}

// providerPoolOf registers an account on cl with credentials for tenant,
// as its member token, makes a pool named name on it and returns the
// account's and the pool's IDs.
func (c *cluster) providerPoolOf(tenant, token string, cl *cloud, name, credentials string) (acct, pool string) {
	c.t.Helper()
	acct = c.must(token, `mutation($in: CreateProviderAccountInput!) { createProviderAccount(input: $in) { providerAccount { id } } }`,
		map[string]any{"in": map[string]any{"name": name, "provider": cl.kind, "credentials": credentials, "settings": cl.settings}},
		"createProviderAccount", "providerAccount", "id")
	pool = c.must(c.operator, `mutation($a: ID!, $t: ID!, $n: String!) { createPool(input: {name: $n, class: "provider", tenantId: $t, providerAccountId: $a}) { pool { id } } }`,
		map[string]any{"a": acct, "t": tenant, "n": name}, "createPool", "pool", "id")
	return acct, pool
}

// ours returns the provider's servers that carry a label.
func (cl *cloud) ours() map[string]string {
	out := map[string]string{}
	for id, label := range cl.servers() {
		if label != "" {
			out[id] = label
		}
	}
	return out
}

func (c *cluster) instanceState(id string) (state, reason string) {
	data, _ := c.gql(c.member, `query($id: ID!) { node(id: $id) { ... on Instance { state stateReason } } }`, map[string]any{"id": id})
	n, _ := data["node"].(map[string]any)
	state, _ = n["state"].(string)
	reason, _ = n["stateReason"].(string)
	return state, reason
}

var clouds = []struct {
	name string
	make func(testing.TB) *cloud
}{
	{"hetzner", hetznerCloud},
	{"proxmox", proxmoxCloud},
}

// TestProviderChurn: on each provider, 100 instances created, stopped,
// started and deleted in random interleavings reach their desired states,
// and nothing is left at the provider or in our books. It also reports the
// calls made per instance lifecycle.
func TestProviderChurn(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) {
			cl := p.make(t)
			c := providerCluster(t, cl, 2)
			churn(t, c, 100, nil)
			testenv.Eventually(t, 10*time.Second, "no server left at the provider", func() bool { return len(cl.servers()) == 0 })
			total, failed := cl.faults.Total()
			t.Logf("%s: %d calls for 100 instance lifecycles with churn (%d failed): %v", p.name, total, failed, cl.faults.Calls())
		})
	}
}

// TestProviderCreateCrash: the reconciler is killed after the provider
// made a server and before our commit; afterwards exactly one server
// exists, and it is the instance's.
func TestProviderCreateCrash(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) {
			cl := p.make(t)
			c := providerCluster(t, cl, 1)
			held := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			cl.block(func() {
				once.Do(func() { close(held) })
				<-release
			})
			id := c.create("crash-1", "RUNNING")
			<-held // the provider has made the server; the reply is held
			c.reconcs[0].signal(syscall.SIGKILL)
			cl.block(nil)
			close(release)
			c.reconcs[0].start()
			testenv.Eventually(t, 30*time.Second, "RUNNING", func() bool { s, _ := c.instanceState(id); return s == "RUNNING" })
			servers := cl.ours()
			uid := uuidOf(t, id)
			if len(servers) != 1 {
				t.Fatalf("servers at the provider: %v, want exactly one", servers)
			}
			for sid, label := range servers {
				if label != uid {
					t.Fatalf("server %s carries label %q, want %s", sid, label, uid)
				}
				var recorded string
				c.db.QueryRow(context.Background(), "SELECT provider_server_id FROM instances WHERE id = $1", uid).Scan(&recorded)
				if recorded != sid {
					t.Fatalf("instance records server %q, the provider has %s", recorded, sid)
				}
			}
		})
	}
}

// uuidOf maps an instance's API ID to its UUID, the label's value.
func uuidOf(t testing.TB, id string) string {
	t.Helper()
	_, u, ok := ids.Parse(id)
	if !ok {
		t.Fatalf("not an ID: %q", id)
	}
	return u.String()
}

// createAll creates n instances wanting desired and returns their IDs.
func (c *cluster) createAll(prefix string, n int, desired string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c.create(fmt.Sprintf("%s-%02d", prefix, i), desired)
	}
	return out
}

// TestProviderFaults: 5xx answers and requests that time out are retried
// with backoff until every instance converges; a provider's quota refusal
// is the instance's ERROR, with the provider's words.
func TestProviderFaults(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) {
			cl := p.make(t)
			c := providerCluster(t, cl, 1)
			cl.faults.Inject(cloudtest.Fault{Match: "POST", Count: 6, Status: 503, Body: `{}`})
			cl.faults.Inject(cloudtest.Fault{Match: "GET", Count: 3, Delay: 2 * time.Second}) // past the 1s timeout
			c.createAll("flaky", 10, "RUNNING")
			t.Logf("converged through 5xx and timeouts in %v", c.settle(60*time.Second))
			if _, failed := cl.faults.Total(); failed != 6 {
				t.Fatalf("%d injected failures served, want 6", failed)
			}

			cl.limit(len(cl.ours()) + 2)
			ids := c.createAll("over", 4, "RUNNING")
			errored := 0
			testenv.Eventually(t, 30*time.Second, "2 RUNNING and 2 in ERROR", func() bool {
				running, errs := 0, 0
				for _, id := range ids {
					switch s, reason := c.instanceState(id); s {
					case "RUNNING":
						running++
					case "ERROR":
						if !strings.Contains(reason, "refused to create its server: "+cl.refusal) {
							t.Fatalf("ERROR reason %q does not carry the provider's message", reason)
						}
						errs++
					}
				}
				errored = errs
				return running == 2 && errs == 2
			})
			t.Logf("%d instances beyond the provider's limit went to ERROR", errored)
		})
	}
}

// TestProviderRateLimit: Hetzner's 429 with Retry-After, and a small
// bucket that runs dry: the reconciler slows down and converges, and the
// provider refuses only a few of its calls.
func TestProviderRateLimit(t *testing.T) {
	t.Parallel()
	cl := hetznerCloudWith(t, hetznertest.Config{RateLimit: 20, RefillPerSecond: 10})
	c := providerCluster(t, cl, 1)
	cl.faults.Inject(cloudtest.Fault{Match: "POST /v1/servers", Count: 3, Status: 429,
		Header: http.Header{"Retry-After": {"1"}}, Body: hetznertest.ErrorBody("rate_limit_exceeded", "rate limit exceeded")})
	ids := c.createAll("paced", 30, "RUNNING")
	for _, id := range ids[:10] {
		c.set("stopInstance", id)
	}
	t.Logf("30 instances converged in %v", c.settle(90*time.Second))
	total, failed := cl.faults.Total()
	refused := cl.served(http.StatusTooManyRequests) - failed
	t.Logf("%d calls, %d injected 429s, %d refused by the empty bucket: %v", total, failed, refused, cl.faults.Calls())
	if refused > total/20 {
		t.Fatalf("the bucket refused %d of %d calls: the reconciler does not pace itself", refused, total)
	}
	if n := cl.arrivedWithin(time.Second, 100*time.Millisecond); n > 0 {
		t.Fatalf("%d requests came while a 429 asked to wait 1 s", n)
	}
}

// TestProviderDrift: a server deleted behind our back makes its instance
// LOST; a server made behind our back with our label is deleted by the
// orphan sweep after the grace period, and the deletion is audited.
func TestProviderDrift(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) {
			cl := p.make(t)
			c := providerCluster(t, cl, 1)
			ids := c.createAll("drift", 2, "RUNNING")
			c.settle(30 * time.Second)
			data, _ := c.gql(c.member, `query($id: ID!) { node(id: $id) { ... on Instance { addresses } } }`, map[string]any{"id": ids[1]})
			if addrs := data["node"].(map[string]any)["addresses"].([]any); (len(addrs) > 0) != cl.addresses {
				t.Fatalf("addresses %v; the provider tells them: %v", addrs, cl.addresses)
			}
			victim := uuidOf(t, ids[0])
			for sid, label := range cl.ours() {
				if label == victim {
					cl.remove(sid)
				}
			}
			testenv.Eventually(t, 10*time.Second, "LOST", func() bool { s, _ := c.instanceState(ids[0]); return s == "LOST" })
			if s, _ := c.instanceState(ids[1]); s != "RUNNING" {
				t.Fatalf("the other instance is %s", s)
			}

			stray := uuid.NewString()
			cl.add(stray)
			testenv.Eventually(t, 15*time.Second, "the orphan deleted", func() bool {
				for _, label := range cl.ours() {
					if label == stray {
						return false
					}
				}
				return true
			})
			// The deletion is audited once the provider has done it.
			audited := func() int {
				return c.count("audit_events WHERE action = 'providerAccount.deleteOrphan' AND details->>'instanceLabel' = $1", stray)
			}
			testenv.Eventually(t, 10*time.Second, "the orphan's deletion audited", func() bool { return audited() > 0 })
			if n := audited(); n != 1 {
				t.Fatalf("%d audit events for the orphan, want 1", n)
			}
			if len(cl.ours()) != 1 {
				t.Fatalf("servers left: %v, want the running instance's only", cl.ours())
			}
		})
	}
}

// TestProviderCredentialsStaySecret: an account's credentials appear in no
// API response, log line or audit event — including when the provider
// refuses them.
func TestProviderCredentialsStaySecret(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) { credentialsStaySecret(t, p.make(t)) })
	}
}

func credentialsStaySecret(t *testing.T, cl *cloud) {
	c := providerCluster(t, cl, 1)
	c.createAll("secret", 2, "RUNNING")
	c.settle(30 * time.Second)
	wrong := cl.wrongCredentials
	bad := c.providerPool(cl, "wrong", wrong)
	refused := c.create("refused", "RUNNING")
	testenv.Eventually(t, 30*time.Second, "ERROR", func() bool { s, _ := c.instanceState(refused); return s == "ERROR" })
	// The token is rotated: the reconciler makes the account's driver anew.
	c.must(c.member, `mutation($in: UpdateProviderAccountInput!) { updateProviderAccount(input: $in) { providerAccount { id } } }`,
		map[string]any{"in": map[string]any{"id": bad, "credentials": cl.credentials}}, "updateProviderAccount", "providerAccount", "id")
	accepted := c.create("accepted", "RUNNING")
	testenv.Eventually(t, 30*time.Second, "RUNNING with the rotated token", func() bool { s, _ := c.instanceState(accepted); return s == "RUNNING" })

	var seen strings.Builder
	for _, q := range []string{
		`{ providerAccounts { id name provider settings tenant { id } } }`,
		`{ instances(first: 50) { edges { node { id name state stateReason addresses } } } }`,
		`{ auditEvents(first: 200) { edges { node { action details errorCode } } } }`,
	} {
		data, errs := c.gql(c.member, q, nil)
		fmt.Fprint(&seen, data, errs)
		data, errs = c.gql(c.operator, q, nil)
		fmt.Fprint(&seen, data, errs)
	}
	for _, p := range c.procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(b)
	}
	rows, err := c.db.Query(context.Background(), "SELECT details::text FROM audit_events")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d string
		rows.Scan(&d)
		seen.WriteString(d)
	}
	for _, secret := range []string{cl.credentials, wrong} {
		if strings.Contains(seen.String(), secret) {
			t.Fatalf("a credential appears in an API response, a log or the audit trail")
		}
	}
	if !strings.Contains(seen.String(), "refused") {
		t.Fatalf("the search saw nothing of the refusal: it searched the wrong things")
	}
}

// BenchmarkProviderLifecycle takes 100 instances through a whole lifecycle
// on each provider — created RUNNING, stopped, started, deleted — and
// reports the calls made to the provider per instance. List calls (the
// sweeps, every 200 ms here, and one look-up before each create) are
// reported apart, since their number follows the sweep interval and the
// time taken rather than the instances.
func BenchmarkProviderLifecycle(b *testing.B) {
	const n = 100
	for _, p := range clouds {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				cl := p.make(b)
				c := providerCluster(b, cl, 1)
				cl.faults.Reset()
				b.StartTimer()
				start := time.Now()
				ids := c.createAll("life", n, "RUNNING")
				c.settle(120 * time.Second)
				for _, op := range []string{"stopInstance", "startInstance", "deleteInstance"} {
					for _, id := range ids {
						c.set(op, id)
					}
					c.settle(120 * time.Second)
				}
				took := time.Since(start)
				b.StopTimer()
				lists, other := 0, 0
				for route, k := range cl.faults.Calls() {
					if route == cl.listRoute {
						lists += k
					} else {
						other += k
					}
				}
				b.ReportMetric(float64(other)/n, "calls/instance")
				b.ReportMetric(float64(lists), "list-calls")
				b.ReportMetric(took.Seconds(), "s/100-lifecycles")
				b.Logf("%s: %v", p.name, cl.faults.Calls())
			}
		})
	}
}

// TestProviderReboot: rebootInstance in a provider pool makes one reboot
// call through the real client library (Hetzner's reboot action, Proxmox's
// status/reboot), and the instance is RUNNING again, with no reason.
func TestProviderReboot(t *testing.T) {
	t.Parallel()
	for _, p := range []struct {
		name  string
		cloud func(testing.TB) *cloud
		route string
	}{
		{"hetzner", hetznerCloud, "POST /v1/servers/{id}/actions/reboot"},
		{"proxmox", proxmoxCloud, "POST /api2/json/nodes/pve/qemu/{id}/status/reboot"},
	} {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			cl := p.cloud(t)
			c := providerCluster(t, cl, 1)
			id := c.createAll("boot", 1, "RUNNING")[0]
			c.settle(90 * time.Second)
			c.set("rebootInstance", id)
			c.settle(90 * time.Second)
			if state, reason := c.instanceState(id); state != "RUNNING" || reason != "" {
				t.Fatalf("after the reboot: %s (%s)", state, reason)
			}
			if n := cl.faults.Calls()[p.route]; n != 1 {
				t.Fatalf("%d reboot calls, want 1; calls: %v", n, cl.faults.Calls())
			}
		})
	}
}
