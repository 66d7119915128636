// Package e2e tests the whole control plane as it runs: the real binary's
// serve, reconcile and host processes, a real Postgres and a Redis server
// of the test's own.
package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv("BC_FLOOR_ADDR") != "" { // BenchmarkLoopbackFloor's writer
		if err := floorWriter(); err != nil {
			fmt.Fprintln(os.Stderr, "floor writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds better-compute once per test process. BC_E2E_BINARY names
// a binary to run instead, such as an older commit's for a benchmark's
// before and after in one run.
func binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("BC_E2E_BINARY"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "e2e-bin-"); buildErr != nil {
			return
		}
		var out []byte
		out, buildErr = exec.Command("go", "build", "-o", binDir, "../cmd/better-compute").CombinedOutput()
		if buildErr != nil {
			buildErr = fmt.Errorf("%w: %s", buildErr, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return filepath.Join(binDir, "better-compute")
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// proc is a process of the cluster; it can be signalled and restarted.
type proc struct {
	t    testing.TB
	name string
	args []string
	env  []string
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
}

// signal sends sig; SIGKILL also waits for the process to be gone.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		<-done
	}
}

func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// tail returns the end of the process's log, for failure messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// cluster is a running control plane with a tenant ready to create
// instances.
type cluster struct {
	t   testing.TB
	db  *pgxpool.Pool
	env []string
	url string
	// urls are the serve processes' addresses, url the first's.
	urls []string
	// hostURLs are the serve processes' TLS host listeners (https://), with
	// options.certified.
	hostURLs []string
	operator string
	member   string
	tenant   string
	pool     string
	flavor   string
	image    string
	server   *proc
	// serves are the serve processes, server the first.
	serves   []*proc
	redis    *proc
	redisURL string
	hosts    []*proc
	// hostDirs are the hosts' state directories, by host name.
	hostDirs map[string]string
	// joins are what the certified hosts joined with, by host name.
	joins   map[string]join
	reconcs []*proc
	procs   []*proc
}

type options struct {
	// serves is how many serve processes run; at least one.
	serves      int
	hosts       int
	reconcilers int
	// hostVcpus is each host's capacity; memory follows at 1 GiB a vCPU.
	hostVcpus int
	// hostArgs are extra flags for every host process.
	hostArgs []string
	// serverEnv is extra environment for serve.
	serverEnv []string
	// reconcileArgs are extra flags for every reconcile process.
	reconcileArgs []string
	// reconcileArgsOf, when set, gives extra flags for reconcile process i
	// alone, such as a listen address of its own.
	reconcileArgsOf func(i int) []string
	// reconcileEnv is extra environment for every reconcile process.
	reconcileEnv []string
	// databaseURL is a migrated database the cluster runs on; default a
	// fresh one of testenv's.
	databaseURL string
	// hostServer maps the URL a host is told to talk to (a serve's,
	// round-robin); default as it is.
	hostServer func(i int, url string) string
	// hostGateway, with certified, gives reconcile the first serve's host
	// listener (BC_HOST_URL) and its plain listener for NoCloud seeds
	// (BC_BOOTSTRAP_SEED_URL), for provider bootstraps' join scripts.
	hostGateway bool
	// certified runs each serve with a TLS host listener, and adopts every
	// host without a bearer credential: it joins with its join token and
	// proves itself by certificate alone.
	certified bool
	// poolRuntime is the runtime of the seeded hosted pool; default fake,
	// the runtime of the fake hosts. A cluster of libvirt hosts sets
	// vps.RuntimeLibvirtKVM.
	poolRuntime string
	// wideNet gives the seeded pool a /16 of addresses (10.50.0.0/16), for
	// fleets past the /22's thousand.
	wideNet bool
}

func (o *options) applyDefaults() {
	if o.serves < 1 {
		o.serves = 1
	}
	if o.poolRuntime == "" {
		o.poolRuntime = vps.RuntimeFake
	}
	if o.hostServer == nil {
		o.hostServer = func(_ int, url string) string { return url }
	}
}

const silentAfter = 3 * time.Second

func start(t testing.TB, o options) *cluster {
	t.Helper()
	o.applyDefaults()
	bin := binary(t)
	dir := t.TempDir()
	c := &cluster{t: t, hostDirs: map[string]string{}, joins: map[string]join{}}
	// Registered first, so a process that never got ready shows its log too.
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.procs {
				t.Logf("--- %s log (tail):\n%s", p.name, p.tail())
			}
		}
	})
	c.redisURL, c.redis = startRedis(t, dir)
	dbURL := o.databaseURL
	if dbURL == "" {
		dbURL = testenv.DatabaseURL(t)
	}
	c.db = testenv.Open(t, dbURL)
	c.operator = "bct_e2e-operator-token-0123456789"
	c.env = []string{
		"DATABASE_URL=" + dbURL, "REDIS_URL=" + c.redisURL, "BC_SECRET=e2e secret",
		"BC_BOOTSTRAP_TOKEN=" + c.operator, "BC_HOST_SILENT_AFTER=" + silentAfter.String(),
		// The churn and benchmarks drive a member far past its default
		// rates on purpose; a test of the limits sets them in serverEnv.
		"BC_RATE_LIMIT_MEMBER_QUERIES=off", "BC_RATE_LIMIT_MEMBER_MUTATIONS=off",
		"BC_RATE_LIMIT_OPERATOR_QUERIES=off", "BC_RATE_LIMIT_OPERATOR_MUTATIONS=off",
		// The provider emulators listen on loopback: the operator lets
		// tenants' accounts reach them.
		"BC_PROVIDER_ENDPOINTS=127.0.0.1", "BC_PROVIDER_ALLOW_PRIVATE=true",
		// The hosts are fake hypervisors: the deployment runs the fake
		// runtime beside libvirt-kvm, and the hosted pool is of it.
		"BC_RUNTIMES=libvirt-kvm,fake",
	}
	addrs := make([]string, o.serves)
	for i := range addrs {
		addrs[i] = freeAddr(t)
	}
	for i, addr := range addrs {
		name := "serve"
		if i > 0 {
			name = fmt.Sprintf("serve-%d", i+1)
		}
		env := o.serverEnv
		if o.certified {
			hostAddr := freeAddr(t)
			env = append(append([]string{}, env...), "BC_HOST_LISTEN="+hostAddr, "BC_HOST_URL=https://"+hostAddr)
			c.hostURLs = append(c.hostURLs, "https://"+hostAddr)
		}
		c.serves = append(c.serves, c.proc(name, env, bin, "serve", "--listen", addr))
		c.urls = append(c.urls, "http://"+addr)
	}
	for _, u := range c.urls {
		waitReadyAt(t, u)
	}
	c.server, c.url = c.serves[0], c.urls[0]
	c.seed(o)
	reconcileEnv := o.reconcileEnv
	if o.hostGateway {
		reconcileEnv = append([]string{"BC_HOST_URL=" + c.hostURLs[0], "BC_BOOTSTRAP_SEED_URL=" + c.url}, reconcileEnv...)
	}
	for i := range o.reconcilers {
		args := append([]string{bin, "reconcile", "--rescan-interval", "1s", "--claim-idle", "2s"}, o.reconcileArgs...)
		if o.reconcileArgsOf != nil {
			args = append(args, o.reconcileArgsOf(i)...)
		}
		c.reconcs = append(c.reconcs, c.proc(fmt.Sprintf("reconcile-%d", i), reconcileEnv, args...))
	}
	for i := range o.hosts {
		name := fmt.Sprintf("hv-%d", i)
		c.hostDirs[name] = filepath.Join(dir, name)
		if o.certified {
			j := c.adoptCertified(name, o.hostVcpus)
			c.joins[name] = j
			c.hosts = append(c.hosts, c.startJoined(fmt.Sprintf("host-%d", i), c.hostURLs[i%len(c.hostURLs)], j, c.hostDirs[name], o.hostArgs...))
			continue
		}
		cred := c.adopt(name, o.hostVcpus)
		server := o.hostServer(i, c.urls[i%len(c.urls)])
		args := append([]string{bin, "host", "--runtime", "fake", "--server", server, "--heartbeat", "500ms", "--state-dir", c.hostDirs[name]}, o.hostArgs...)
		c.hosts = append(c.hosts, c.proc(fmt.Sprintf("host-%d", i), []string{"BC_HOST_CREDENTIAL=" + cred}, args...))
	}
	return c
}

func (c *cluster) proc(name string, env []string, args ...string) *proc {
	p := &proc{t: c.t, name: name, args: args, env: append(append([]string{}, c.env...), env...), log: filepath.Join(c.t.TempDir(), name+".log")}
	p.start()
	c.procs = append(c.procs, p)
	c.t.Cleanup(p.stop)
	return p
}

// startRedis runs a Redis server of the test's own, so tests may flush or
// restart it.
func startRedis(t testing.TB, dir string) (string, *proc) {
	t.Helper()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	p := &proc{t: t, name: "redis", log: filepath.Join(dir, "redis.log"),
		args: []string{"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}}
	p.start()
	t.Cleanup(p.stop)
	waitRedis(t, addr, p)
	return "redis://" + addr, p
}

// waitRedis waits until the Redis server p listens at addr.
func waitRedis(t testing.TB, addr string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("REDIS-SERVER DID NOT START (is Debian's redis-server installed? make test installs it): %v\n%s", err, p.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restartRedis kills the cluster's Redis server and starts it again, empty.
func (c *cluster) restartRedis() {
	c.t.Helper()
	c.redis.signal(syscall.SIGKILL)
	c.redis.start()
	waitRedis(c.t, strings.TrimPrefix(c.redisURL, "redis://"), c.redis)
}

// flushRedis loses all of Redis's data, as FLUSHALL does.
func (c *cluster) flushRedis() {
	c.t.Helper()
	out, err := exec.Command("redis-cli", "-u", c.redisURL, "FLUSHALL").CombinedOutput()
	if err != nil {
		c.t.Fatalf("FLUSHALL: %v %s", err, out)
	}
}

func waitReadyAt(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve at %s not ready: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric reads a counter or gauge from a server's /metrics.
func metric(t testing.TB, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// gql runs a GraphQL operation and returns its data; errors fail the test
// unless allowed.
func (c *cluster) gql(token, query string, vars map[string]any) (map[string]any, []map[string]any) {
	data, errs, err := post(c.url, token, query, vars)
	if err != nil {
		c.t.Errorf("graphql: %v", err)
	}
	return data, errs
}

// post runs a GraphQL operation at the serve process at url; err is a
// failure to get an answer.
func post(url, token, query string, vars map[string]any) (map[string]any, []map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data   map[string]any   `json:"data"`
		Errors []map[string]any `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, nil, fmt.Errorf("read answer: %w", err)
	}
	return out.Data, out.Errors, nil
}

func (c *cluster) must(token, query string, vars map[string]any, path ...string) string {
	c.t.Helper()
	data, errs := c.gql(token, query, vars)
	if len(errs) > 0 {
		c.t.Fatalf("%s: %v", query, errs)
	}
	var v any = data
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	s, _ := v.(string)
	return s
}

func (c *cluster) seed(o options) {
	c.tenant, c.member = c.addTenant("acme")
	c.pool = c.must(c.operator, `mutation($r: String!) { createPool(input: {name: "fra1", class: "vps-host", runtime: $r}) { pool { id } } }`,
		map[string]any{"r": o.poolRuntime}, "createPool", "pool", "id")
	cidr, end := "10.50.0.0/22", "10.50.3.250"
	if o.wideNet {
		cidr, end = "10.50.0.0/16", "10.50.255.250"
	}
	c.must(c.operator, `mutation($p: ID!, $c: String!, $e: String!) { createIpPool(input: {poolId: $p, cidr: $c, gateway: "10.50.0.1", rangeStart: "10.50.0.10", rangeEnd: $e}) { pool { id } } }`,
		map[string]any{"p": c.pool, "c": cidr, "e": end})
	c.flavor = c.must(c.operator, `mutation { createFlavor(input: {name: "one", vcpus: 1, memoryMb: 1024, diskGb: 10}) { flavor { id } } }`, nil, "createFlavor", "flavor", "id")
	c.image = c.must(c.operator, `mutation { registerImage(input: {name: "debian", sourceUrl: "file:///images/debian.qcow2", sha256: "`+strings.Repeat("c", 64)+`", format: QCOW2, visibility: PUBLIC, verified: true}) { image { id } } }`, nil, "registerImage", "image", "id")
}

// addTenant creates a tenant named name and returns its ID and a member's
// token.
func (c *cluster) addTenant(name string) (id, token string) {
	c.t.Helper()
	id = c.must(c.operator, `mutation($n: String!) { createTenant(input: {name: $n}) { tenant { id } } }`, map[string]any{"n": name}, "createTenant", "tenant", "id")
	token = c.must(c.operator, `mutation($n: String!, $t: ID) { createApiToken(input: {name: $n, tenantId: $t}) { token } }`, map[string]any{"n": name, "t": id}, "createApiToken", "token")
	return id, token
}

// adopt creates a host with capacity and returns its credential.
func (c *cluster) adopt(name string, vcpus int) string {
	data, errs := c.gql(c.operator, `mutation($p: ID!, $n: String!) { createHost(input: {poolId: $p, name: $n}) { credential host { id } } }`, map[string]any{"p": c.pool, "n": name})
	if len(errs) > 0 {
		c.t.Fatal(errs)
	}
	ch := data["createHost"].(map[string]any)
	id := ch["host"].(map[string]any)["id"].(string)
	c.must(c.operator, `mutation($h: ID!, $v: Int!, $m: Int!) { setHostCapacity(input: {hostId: $h, vcpus: $v, memoryMb: $m, diskGb: 100000}) { host { id } } }`,
		map[string]any{"h": id, "v": vcpus, "m": vcpus * 1024})
	return ch["credential"].(string)
}

// join is what a host is given to join with: its ID, its one-time join
// token and the CA fingerprint its join command pins.
type join struct {
	host, token, pin string
}

// adoptCertified creates a host with capacity and no bearer credential,
// and returns its join token and pin, read from its join command.
func (c *cluster) adoptCertified(name string, vcpus int) join {
	c.t.Helper()
	data, errs := c.gql(c.operator, `mutation($p: ID!, $n: String!) { createHost(input: {poolId: $p, name: $n, bearerCredential: false}) { credential joinToken joinCommand host { id } } }`,
		map[string]any{"p": c.pool, "n": name})
	if len(errs) > 0 {
		c.t.Fatal(errs)
	}
	ch := data["createHost"].(map[string]any)
	if ch["credential"] != nil {
		c.t.Fatalf("createHost without a bearer credential returned one: %v", ch["credential"])
	}
	id := ch["host"].(map[string]any)["id"].(string)
	c.must(c.operator, `mutation($h: ID!, $v: Int!, $m: Int!) { setHostCapacity(input: {hostId: $h, vcpus: $v, memoryMb: $m, diskGb: 100000}) { host { id } } }`,
		map[string]any{"h": id, "v": vcpus, "m": vcpus * 1024})
	return join{host: id, token: ch["joinToken"].(string), pin: pinOf(c.t, ch["joinCommand"])}
}

// pinOf reads --ca-sha256 of a join command.
func pinOf(t testing.TB, command any) string {
	t.Helper()
	s, _ := command.(string)
	fields := strings.Fields(s)
	for i, f := range fields {
		if f == "--ca-sha256" && i+1 < len(fields) {
			return fields[i+1]
		}
	}
	t.Fatalf("join command %q has no --ca-sha256", s)
	return ""
}

// startJoined starts a fake host that joins at server (https) with j and
// keeps its certificate in dir.
func (c *cluster) startJoined(name, server string, j join, dir string, args ...string) *proc {
	c.t.Helper()
	all := append([]string{binary(c.t), "host", "--runtime", "fake", "--server", server, "--heartbeat", "500ms", "--state-dir", dir,
		"--join-token", j.token, "--ca-sha256", j.pin}, args...)
	return c.proc(name, nil, all...)
}

var sshKey = func() string {
	pub, _, _ := ed25519.GenerateKey(nil)
	k, _ := ssh.NewPublicKey(pub)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}()

// create asks for an instance and returns its ID.
func (c *cluster) create(name, desired string) string {
	c.t.Helper()
	return c.createOf(c.flavor, name, desired)
}

// createOf asks for an instance of a flavor and returns its ID.
func (c *cluster) createOf(flavor, name, desired string) string {
	c.t.Helper()
	return c.must(c.member, `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`,
		map[string]any{"in": map[string]any{"poolId": c.pool, "flavorId": flavor, "imageId": c.image, "name": name,
			"sshKeys": []string{sshKey}, "desiredState": desired}}, "createInstance", "instance", "id")
}

// set runs start/stop/deleteInstance. Starting or stopping an instance a
// racing request deleted is FAILED_PRECONDITION, which is fine.
func (c *cluster) set(mutation, id string) {
	c.t.Helper()
	_, errs := c.gql(c.member, `mutation($id: ID!) { `+mutation+`(input: {id: $id}) { instance { id } } }`, map[string]any{"id": id})
	for _, e := range errs {
		code, _ := e["extensions"].(map[string]any)["code"].(string)
		if code != "FAILED_PRECONDITION" || mutation == "deleteInstance" {
			c.t.Errorf("%s %s: %v", mutation, id, errs)
		}
	}
}

func (c *cluster) count(query string, args ...any) int {
	c.t.Helper()
	var n int
	if err := c.db.QueryRow(context.Background(), "SELECT count(*) FROM "+query, args...).Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

// settle waits until every instance is at its desired state, or fails.
func (c *cluster) settle(timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		if c.count("instances WHERE state <> desired_state") == 0 {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			rows, err := c.db.Query(context.Background(), `SELECT i.state, i.desired_state, i.state_reason, p.class,
				coalesce(i.observed_state, '') || '/' || coalesce(i.provider_status, ''), count(*)
				FROM instances i JOIN pools p ON p.id = i.pool_id WHERE i.state <> i.desired_state GROUP BY 1, 2, 3, 4, 5`)
			var sb strings.Builder
			for err == nil && rows.Next() {
				var s, d, r, class, seen string
				var n int
				err = rows.Scan(&s, &d, &r, &class, &seen, &n)
				fmt.Fprintf(&sb, "\n  %d × %s (want %s) in a %s pool, seen %s: %s", n, s, d, class, seen, r)
			}
			if err == nil {
				err = rows.Err()
			}
			c.t.Fatalf("not settled after %v:%s (%v)", timeout, sb.String(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noLeaks checks nothing is held once every instance is deleted, and that
// the tenants of tokens (default the member's) use no quota.
func (c *cluster) noLeaks(tokens ...string) {
	c.t.Helper()
	if len(tokens) == 0 {
		tokens = []string{c.member}
	}
	c.none(map[string]string{
		"live allocations":                    "allocations WHERE released_at IS NULL",
		"live device claims":                  "device_claims WHERE released_at IS NULL",
		"live IP leases":                      "ip_leases WHERE released_at IS NULL",
		"host usage left":                     "host_usage WHERE allocations <> 0 OR vcpus <> 0 OR memory_mb <> 0 OR disk_gb <> 0",
		"instances not DELETED":               "instances WHERE state <> 'DELETED'",
		"sandboxes not ended":                 "sandboxes WHERE ended_as IS NULL",
		"allocations released twice or never": "(SELECT instance_id FROM allocations GROUP BY instance_id HAVING count(*) FILTER (WHERE released_at IS NULL) > 0) x",
	})
	for _, token := range tokens {
		data, _ := c.gql(token, `{ viewer { tenant { name quota { usage { instances vcpus memoryMb gpus } } } } }`, nil)
		tenant := data["viewer"].(map[string]any)["tenant"].(map[string]any)
		usage := tenant["quota"].(map[string]any)["usage"].(map[string]any)
		for k, v := range usage {
			if v.(float64) != 0 {
				c.t.Errorf("quota usage of %s: %s = %v", tenant["name"], k, v)
			}
		}
	}
}
