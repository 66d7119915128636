package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostjoin"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// bootstrapCluster starts a control plane whose operators share an account
// on cl, which also serves a provider pool, with a host gateway URL for
// join scripts, and returns it with the account's ID. env is extra reconcile environment.
func bootstrapCluster(t *testing.T, cl *cloud, env ...string) (*cluster, string) {
	t.Helper()
	c := start(t, options{reconcilers: 1, reconcileArgs: providerArgs, reconcileEnv: env, certified: true, hostGateway: true})
	acct := c.must(c.operator, `mutation($in: CreateProviderAccountInput!) { createProviderAccount(input: $in) { providerAccount { id } } }`,
		map[string]any{"in": map[string]any{"name": "ops-" + strings.ToLower(cl.kind), "provider": cl.kind, "credentials": cl.credentials, "settings": cl.settings}},
		"createProviderAccount", "providerAccount", "id")
	// The account serves a provider pool too, so the sweep lists it.
	c.must(c.operator, `mutation($a: ID!) { createPool(input: {name: "shared-cloud", class: "provider", providerAccountId: $a}) { pool { id } } }`,
		map[string]any{"a": acct}, "createPool", "pool", "id")
	return c, acct
}

// bootstrapEvents follows the operators' channel of c's Redis from now
// on, where the relay publishes provider bootstrap events. Its result
// gives the steps published of bootstrap id so far, in order, deduped by
// version, without UPDATED (a retry's reason), and fails the test if an
// event holds secret.
func (c *cluster) bootstrapEvents(t *testing.T) func(id, secret string) []string {
	t.Helper()
	opts, err := redis.ParseURL(c.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	sub := rdb.Subscribe(context.Background(), "bc:"+events.OperatorChannel)
	if _, err := sub.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		payloads []string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range sub.Channel() {
			mu.Lock()
			payloads = append(payloads, msg.Payload)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { sub.Close(); <-done; rdb.Close() })
	return func(id, secret string) []string {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		var steps []string
		last := int64(0)
		for _, p := range payloads {
			if secret != "" && strings.Contains(p, secret) {
				t.Errorf("a bootstrap event holds the token: %s", p)
			}
			var ev events.BootstrapEvent
			if err := json.Unmarshal([]byte(p), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind != events.KindBootstrap || ev.Bootstrap.ID != id || ev.Version <= last {
				continue
			}
			last = ev.Version
			if ev.Type != events.Updated {
				steps = append(steps, string(ev.Type))
			}
		}
		return steps
	}
}

// waitSteps waits until the steps published of bootstrap id are want.
func waitSteps(t *testing.T, steps func(id, secret string) []string, id, secret string, want ...string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("the events %v of %s", want, id), func() bool {
		return strings.Join(steps(id, secret), " ") == strings.Join(want, " ")
	})
}

// caSHA256 is what a joining host pins: the SHA-256 of the DER of the
// host CA that signs serve's host listener (the oldest live one).
func (c *cluster) caSHA256() string {
	c.t.Helper()
	var certPEM string
	if err := c.db.QueryRow(context.Background(), `SELECT cert_pem FROM host_cas WHERE retired_at IS NULL ORDER BY created_at, id LIMIT 1`).Scan(&certPEM); err != nil {
		c.t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil {
		c.t.Fatalf("host CA certificate %q", certPEM)
	}
	sum := sha256.Sum256(block.Bytes)
	return hex.EncodeToString(sum[:])
}

const bootstrapFields = `id name state stateReason serverType image deadline createdAt updatedAt
	providerAccount { id name } pool { id name } host { id name }`

// bootstrap asks for a host named name from the account into the seeded
// hosted pool and returns the bootstrap's ID.
func (c *cluster) bootstrap(cl *cloud, acct, name string) string {
	c.t.Helper()
	return c.must(c.operator, `mutation($in: CreateProviderBootstrapInput!) { createProviderBootstrap(input: $in) { providerBootstrap { id } } }`,
		map[string]any{"in": map[string]any{"providerAccountId": acct, "poolId": c.pool, "serverType": cl.bootstrapType, "image": cl.image, "name": name}},
		"createProviderBootstrap", "providerBootstrap", "id")
}

// bootstrapOf reads a bootstrap as operators see it.
func (c *cluster) bootstrapOf(id string) map[string]any {
	c.t.Helper()
	data, errs := c.gql(c.operator, `query($id: ID!) { providerBootstrap(id: $id) { `+bootstrapFields+` } }`, map[string]any{"id": id})
	if len(errs) > 0 {
		c.t.Fatal(errs)
	}
	b, _ := data["providerBootstrap"].(map[string]any)
	return b
}

// waitBootstrap waits for the bootstrap to reach state and returns it.
func (c *cluster) waitBootstrap(id, state string, timeout time.Duration) map[string]any {
	c.t.Helper()
	var b map[string]any
	testenv.Eventually(c.t, timeout, "bootstrap "+state, func() bool {
		b = c.bootstrapOf(id)
		return b["state"] == state
	})
	return b
}

// machineOf waits for the bootstrap's machine at the provider.
func machineOf(t *testing.T, cl *cloud, c *cluster, id string) machine {
	t.Helper()
	uid, ok := ids.Decode(ids.ProviderBootstrap, id)
	if !ok {
		t.Fatalf("bootstrap ID %q", id)
	}
	var m machine
	testenv.Eventually(t, 15*time.Second, "the bootstrap's machine at the provider", func() bool {
		for _, x := range cl.machines() {
			if x.bootstrap == uid.String() {
				m = x
				return true
			}
		}
		return false
	})
	return m
}

// fetch GETs url and returns the status and body.
func fetch(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// userData is what the machine's cloud-init runs: the user data the
// provider hands it (Hetzner), or the user-data of the NoCloud seed its
// SMBIOS serial names, served by the gateway (Proxmox).
func userData(t *testing.T, m machine) string {
	t.Helper()
	if m.seedURL == "" {
		return m.userData
	}
	code, body := fetch(t, m.seedURL+"user-data")
	if code != http.StatusOK {
		t.Fatalf("seed user-data: %d %s", code, body)
	}
	if code, meta := fetch(t, m.seedURL+"meta-data"); code != http.StatusOK || !strings.Contains(meta, "local-hostname: ") {
		t.Fatalf("seed meta-data: %d %q", code, meta)
	}
	return body
}

// writtenFile returns the content a #cloud-config's write_files gives path,
// as cloud-init writes it (a literal block indented six spaces).
func writtenFile(t *testing.T, cloudConfig, path string) string {
	t.Helper()
	if !strings.HasPrefix(cloudConfig, "#cloud-config\n") {
		t.Fatalf("user data is not a #cloud-config:\n%s", cloudConfig)
	}
	_, rest, found := strings.Cut(cloudConfig, "  - path: "+path+"\n")
	if !found {
		t.Fatalf("user data writes no %s:\n%s", path, cloudConfig)
	}
	_, rest, _ = strings.Cut(rest, "    content: |\n")
	var b strings.Builder
	for line := range strings.Lines(rest) {
		body, ok := strings.CutPrefix(line, "      ")
		if !ok {
			break
		}
		b.WriteString(body)
	}
	return b.String()
}

// TestProviderBootstrap: on each provider, a bootstrap creates a machine
// carrying the join script (Hetzner: in its user data; Proxmox: in the
// NoCloud seed its SMBIOS serial names, which the gateway serves), and the
// provider-pool sweep leaves the machine alone. The test plays the
// machine: it runs the host daemon with the environment the script
// writes; the host joins, the bootstrap is JOINED with it, and the host
// serves an instance. The token is then refused, and found nowhere.
func TestProviderBootstrap(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) {
			cl := p.make(t)
			c, acct := bootstrapCluster(t, cl)
			steps := c.bootstrapEvents(t)
			asked := time.Now()
			id := c.bootstrap(cl, acct, "rented-1")
			m := machineOf(t, cl, c, id)
			b := c.waitBootstrap(id, "PROVISIONING", 10*time.Second)
			t.Logf("%s: machine created and recorded %v after the bootstrap was asked for", p.name, time.Since(asked).Round(time.Millisecond))
			if b["deadline"] == nil || b["host"] != nil || b["name"] != "rented-1" {
				t.Errorf("provisioning bootstrap: %v", b)
			}

			script := userData(t, m)
			env := hostjoin.ParseEnv(writtenFile(t, script, hostjoin.EnvPath))
			token := env["BC_JOIN_TOKEN"]
			t.Run("the join script", func(t *testing.T) {
				if env["BC_SERVER"] != c.hostURLs[0] {
					t.Errorf("BC_SERVER = %q, want serve's host listener %q", env["BC_SERVER"], c.hostURLs[0])
				}
				if !strings.HasPrefix(token, hostproto.JoinTokenPrefix) || len(token) < 40 {
					t.Errorf("BC_JOIN_TOKEN = %q, want a %s token", token, hostproto.JoinTokenPrefix)
				}
				if env["BC_CA_SHA256"] != c.caSHA256() {
					t.Errorf("BC_CA_SHA256 = %q, want the host CA's %q", env["BC_CA_SHA256"], c.caSHA256())
				}
				unit := writtenFile(t, script, hostjoin.UnitPath)
				if !strings.Contains(unit, "EnvironmentFile="+hostjoin.EnvPath) || !strings.Contains(unit, "ExecStart="+hostjoin.BinaryPath+" host --server ${BC_SERVER}") {
					t.Errorf("unit:\n%s", unit)
				}
				if !strings.Contains(script, "[systemctl, enable, --now, better-compute-host.service]") {
					t.Errorf("the script does not start the daemon:\n%s", script)
				}
				if n := c.count("provider_bootstraps WHERE join_token_hash = sha256($1::bytea)", []byte(token)); n != 1 {
					t.Errorf("%d bootstraps hold the token's hash, want 1", n)
				}
			})

			t.Run("the sweep leaves the machine alone", func(t *testing.T) {
				before := cl.faults.Calls()[cl.listRoute]
				// The orphan grace is 1s and sweeps come every 200ms.
				testenv.Eventually(t, 15*time.Second, "ten sweeps", func() bool { return cl.faults.Calls()[cl.listRoute] >= before+10 })
				if got := machineOf(t, cl, c, id); got.id != m.id {
					t.Errorf("machine %s, then %s", m.id, got.id)
				}
				if n := c.count("audit_events WHERE action = 'providerAccount.deleteOrphan'"); n != 0 {
					t.Errorf("%d orphans deleted", n)
				}
				if n := len(cl.machines()); n != 1 {
					t.Errorf("%d machines, want 1", n)
				}
			})

			t.Run("the machine joins and its host serves an instance", func(t *testing.T) {
				started := time.Now()
				c.proc("machine", []string{"BC_JOIN_TOKEN=" + env["BC_JOIN_TOKEN"], "BC_CA_SHA256=" + env["BC_CA_SHA256"]},
					binary(t), "host", "--runtime", "fake", "--server", env["BC_SERVER"], "--heartbeat", "500ms", "--state-dir", t.TempDir())
				b := c.waitBootstrap(id, "JOINED", 30*time.Second)
				t.Logf("%s: JOINED %v after the daemon started", p.name, time.Since(started).Round(time.Millisecond))
				host, _ := b["host"].(map[string]any)
				if host == nil || host["name"] != "rented-1" || b["stateReason"] != "" {
					t.Fatalf("joined bootstrap: %v", b)
				}
				if n := c.count("hosts WHERE name = 'rented-1' AND pool_id = (SELECT pool_id FROM provider_bootstraps WHERE name = 'rented-1') AND cert_not_after > now()"); n != 1 {
					t.Fatalf("%d certified hosts rented-1 in the bootstrap's pool", n)
				}
				c.must(c.operator, `mutation($h: ID!) { setHostCapacity(input: {hostId: $h, vcpus: 2, memoryMb: 2048, diskGb: 100}) { host { id } } }`,
					map[string]any{"h": host["id"]})
				c.create("on-rented", "RUNNING")
				c.settle(30 * time.Second)
				if n := c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE h.name = 'rented-1' AND i.state = 'RUNNING'"); n != 1 {
					t.Fatalf("%d instances running on rented-1", n)
				}
			})

			t.Run("the token is refused a second time", func(t *testing.T) {
				if status, body := c.joinRequest(token, csrFor(t, "")); status != http.StatusUnauthorized || !strings.Contains(body, "join_token") {
					t.Fatalf("second join: %d %s, want 401 join_token", status, body)
				}
				if code, _ := fetch(t, hostjoin.SeedURL(c.url, token)+"user-data"); code != http.StatusNotFound {
					t.Errorf("a spent token's seed: %d, want 404", code)
				}
				if n := c.count("hosts"); n != 1 {
					t.Errorf("%d hosts, want rented-1 alone", n)
				}
			})

			t.Run("each step was published to operators, without the token", func(t *testing.T) {
				waitSteps(t, steps, id, token, "CREATED", "PROVISIONING", "JOINED")
			})

			t.Run("the token is nowhere else", func(t *testing.T) {
				c.scanFor(token)
			})
		})
	}
}

// scanFor fails if secret appears in what the API answers operators and
// members (bootstraps, hosts, the audit log), serve's metrics, the audit
// rows, or any process's log.
func (c *cluster) scanFor(secret string) {
	c.t.Helper()
	for _, q := range []struct{ token, query string }{
		{c.operator, `{ providerBootstraps { ` + bootstrapFields + ` } }`},
		{c.operator, `{ hosts { id name pool { name } } }`},
		{c.operator, `{ auditEvents(first: 500) { nodes { action targetType targetId details errorCode } } }`},
		{c.member, `{ auditEvents(first: 500) { nodes { action targetType targetId details errorCode } } }`},
		{c.member, `{ providerBootstraps { id } }`},
	} {
		data, errs := c.gql(q.token, q.query, nil)
		if all := fmt.Sprint(data, errs); strings.Contains(all, secret) {
			c.t.Errorf("the token is in the answer to %s", q.query)
		}
	}
	if _, body := fetch(c.t, c.url+"/metrics"); strings.Contains(body, secret) {
		c.t.Errorf("the token is in serve's metrics")
	}
	if n := c.count("audit_events WHERE details::text LIKE '%' || $1 || '%'", secret); n != 0 {
		c.t.Errorf("the token is in %d audit rows", n)
	}
	for _, p := range c.procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			c.t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			c.t.Errorf("the token is in %s's log (%s)", p.name, filepath.Base(p.log))
		}
	}
}

// TestProviderBootstrapTimeout: a machine that never joins is deleted at
// the provider at the bootstrap's timeout, the bootstrap is FAILED with
// the reason, the deletion audited, and its token is dead (its seed is no
// longer served).
func TestProviderBootstrapTimeout(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) {
			cl := p.make(t)
			c, acct := bootstrapCluster(t, cl, "BC_BOOTSTRAP_TIMEOUT=3s")
			steps := c.bootstrapEvents(t)
			id := c.bootstrap(cl, acct, "never-joins")
			m := machineOf(t, cl, c, id)
			c.waitBootstrap(id, "PROVISIONING", 10*time.Second)
			token := hostjoin.ParseEnv(writtenFile(t, userData(t, m), hostjoin.EnvPath))["BC_JOIN_TOKEN"]
			b := c.waitBootstrap(id, "FAILED", 15*time.Second)
			if reason, _ := b["stateReason"].(string); !strings.Contains(reason, "did not join within 3s") {
				t.Errorf("stateReason %q", reason)
			}
			if n := len(cl.machines()); n != 0 {
				t.Errorf("%d machines left at the provider", n)
			}
			if n := c.count("provider_bootstraps WHERE machine_deleted AND token_expires_at <= now()"); n != 1 {
				t.Errorf("%d failed bootstraps with their machine deleted and token dead, want 1", n)
			}
			if n := c.count("audit_events WHERE action = 'providerBootstrap.deleteMachine' AND details->>'serverId' = $1", m.id); n != 1 {
				t.Errorf("%d audited deletions of machine %s, want 1", n, m.id)
			}
			if code, _ := fetch(t, hostjoin.SeedURL(c.url, token)+"user-data"); code != http.StatusNotFound {
				t.Errorf("a failed bootstrap's seed: %d, want 404", code)
			}
			waitSteps(t, steps, id, token, "CREATED", "PROVISIONING", "FAILED")
			if status, body := c.joinRequest(token, csrFor(t, "")); status != http.StatusUnauthorized {
				t.Errorf("a failed bootstrap's join: %d %s, want 401", status, body)
			}
			c.scanFor(token)
		})
	}
}

// TestProviderBootstrapTokenLifetime: a join token outlived by its
// bootstrap's deadline is refused after its lifetime: its seed is no
// longer served and a join with it is refused.
func TestProviderBootstrapTokenLifetime(t *testing.T) {
	t.Parallel()
	cl := proxmoxCloud(t)
	c, acct := bootstrapCluster(t, cl, "BC_BOOTSTRAP_TOKEN_TTL=2s")
	id := c.bootstrap(cl, acct, "slow-boot")
	m := machineOf(t, cl, c, id)
	c.waitBootstrap(id, "PROVISIONING", 10*time.Second)
	if code, _ := fetch(t, m.seedURL+"user-data"); code != http.StatusOK {
		t.Fatalf("a fresh seed: %d", code)
	}
	token := hostjoin.ParseEnv(writtenFile(t, userData(t, m), hostjoin.EnvPath))["BC_JOIN_TOKEN"]
	testenv.Eventually(t, 10*time.Second, "the seed refused after the token's lifetime", func() bool {
		code, _ := fetch(t, m.seedURL+"user-data")
		return code == http.StatusNotFound
	})
	if status, body := c.joinRequest(token, csrFor(t, "")); status != http.StatusUnauthorized || !strings.Contains(body, "join_token") {
		t.Errorf("a join past the token's lifetime: %d %s, want 401 join_token", status, body)
	}
	if b := c.bootstrapOf(id); b["state"] != "PROVISIONING" || b["host"] != nil {
		t.Errorf("the bootstrap after a refused join: %v", b)
	}
	if code, _ := fetch(t, strings.Replace(m.seedURL, hostproto.JoinTokenPrefix, hostproto.JoinTokenPrefix+"x", 1)+"user-data"); code != http.StatusNotFound {
		t.Errorf("an unknown token's seed: %d, want 404", code)
	}
}

// TestProviderBootstrapBadInput: bad requests are refused with a coded
// error naming the field, and nothing is written but the failure's audit.
func TestProviderBootstrapBadInput(t *testing.T) {
	t.Parallel()
	cl := hetznerCloud(t)
	c, acct := bootstrapCluster(t, cl)
	tenantAcct, providerPool := c.providerPoolOf(c.tenant, c.member, cl, "tenant-cloud", cl.credentials)
	deleted := c.must(c.operator, `mutation($in: CreateProviderAccountInput!) { createProviderAccount(input: $in) { providerAccount { id } } }`,
		map[string]any{"in": map[string]any{"name": "gone", "provider": cl.kind, "credentials": cl.credentials, "settings": cl.settings}},
		"createProviderAccount", "providerAccount", "id")
	c.must(c.operator, `mutation($id: ID!) { deleteProviderAccount(input: {id: $id}) { providerAccount { id } } }`, map[string]any{"id": deleted})
	c.adopt("taken-host", 1)
	c.bootstrap(cl, acct, "taken-bootstrap")
	unknownAcct := ids.Encode(ids.ProviderAccount, [16]byte{1})
	unknownPool := ids.Encode(ids.Pool, [16]byte{2})

	good := func() map[string]any {
		return map[string]any{"providerAccountId": acct, "poolId": c.pool, "serverType": "cx22", "image": "debian-12", "name": "fresh"}
	}
	for _, tc := range []struct {
		name, field, value     any
		token, code, wantField string
	}{
		{name: "a tenant's provider account", field: "providerAccountId", value: tenantAcct, code: "INVALID_INPUT", wantField: "providerAccountId"},
		{name: "a provider pool", field: "poolId", value: providerPool, code: "INVALID_INPUT", wantField: "poolId"},
		{name: "an unknown account", field: "providerAccountId", value: unknownAcct, code: "NOT_FOUND", wantField: "providerAccountId"},
		{name: "a deleted account", field: "providerAccountId", value: deleted, code: "NOT_FOUND", wantField: "providerAccountId"},
		{name: "an unknown pool", field: "poolId", value: unknownPool, code: "NOT_FOUND", wantField: "poolId"},
		{name: "a malformed account ID", field: "providerAccountId", value: "pa_!", code: "INVALID_INPUT", wantField: "providerAccountId"},
		{name: "an empty name", field: "name", value: "", code: "INVALID_INPUT", wantField: "name"},
		{name: "an oversized name", field: "name", value: strings.Repeat("a", 64), code: "INVALID_INPUT", wantField: "name"},
		{name: "a name that is no slug", field: "name", value: "Rented One", code: "INVALID_INPUT", wantField: "name"},
		{name: "a host's name", field: "name", value: "taken-host", code: "CONFLICT", wantField: "name"},
		{name: "a bootstrap's name", field: "name", value: "taken-bootstrap", code: "CONFLICT", wantField: "name"},
		{name: "an empty server type", field: "serverType", value: "", code: "INVALID_INPUT", wantField: "serverType"},
		{name: "an oversized image", field: "image", value: strings.Repeat("i", 101), code: "INVALID_INPUT", wantField: "image"},
		{name: "an image with a newline", field: "image", value: "debian\n12", code: "INVALID_INPUT", wantField: "image"},
		{name: "a member", token: c.member, code: "FORBIDDEN"},
	} {
		t.Run(tc.name.(string), func(t *testing.T) {
			in := good()
			if tc.field != nil {
				in[tc.field.(string)] = tc.value
			}
			token := tc.token
			if token == "" {
				token = c.operator
			}
			bootstraps, audits := c.count("provider_bootstraps"), c.count("audit_events WHERE action = 'providerBootstrap.create' AND outcome = 'success'")
			_, errs := c.gql(token, `mutation($in: CreateProviderBootstrapInput!) { createProviderBootstrap(input: $in) { providerBootstrap { id } } }`, map[string]any{"in": in})
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			ext, _ := errs[0]["extensions"].(map[string]any)
			if ext["code"] != tc.code || (tc.wantField != "" && ext["field"] != tc.wantField) {
				t.Errorf("error %v, want %s on %s", errs[0], tc.code, tc.wantField)
			}
			if n := c.count("provider_bootstraps"); n != bootstraps {
				t.Errorf("%d bootstraps, were %d", n, bootstraps)
			}
			if n := c.count("audit_events WHERE action = 'providerBootstrap.create' AND outcome = 'success'"); n != audits {
				t.Errorf("%d successful creates audited, were %d", n, audits)
			}
		})
	}
	// The relay deletes what it published within a moment (it gathers its
	// deletes), so the wakes are judged once it has.
	testenv.Eventually(t, 10*time.Second, "the relay to publish every bootstrap wake", func() bool {
		return c.count("outbox WHERE topic = 'vps.bootstraps'") == 0
	})
	if n := len(cl.machines()); n > 1 {
		t.Errorf("%d machines, want only taken-bootstrap's", n)
	}
}

// TestProviderBootstrapCrash: a reconciler killed after the provider made
// a bootstrap's machine, before the machine was recorded, leaves one
// machine in the end, not two: the next pass finds the machine by its
// label, deletes it (its token is known nowhere) and makes the one it
// records, whose join script joins.
func TestProviderBootstrapCrash(t *testing.T) {
	t.Parallel()
	for _, p := range clouds {
		t.Run(p.name, func(t *testing.T) {
			cl := p.make(t)
			c, acct := bootstrapCluster(t, cl)
			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			cl.block(func() {
				once.Do(func() { close(held) })
				<-release
			})
			id := c.bootstrap(cl, acct, "crashed")
			<-held // the provider has made the machine; the reply is held
			c.reconcs[0].signal(syscall.SIGKILL)
			cl.block(nil)
			close(release)
			if n := len(cl.servers()); n != 1 {
				t.Fatalf("%d servers at the provider after the held create, want 1", n)
			}
			c.reconcs[0].start()
			c.waitBootstrap(id, "PROVISIONING", 30*time.Second)
			machines := cl.machines()
			if len(machines) != 1 || len(cl.servers()) != 1 {
				t.Fatalf("machines %+v (of servers %v), want exactly one", machines, cl.servers())
			}
			if n := c.count("audit_events WHERE action = 'providerBootstrap.deleteMachine' AND details->>'reason' LIKE '%record was lost%'"); n != 1 {
				t.Errorf("%d audited deletions of the unrecorded machine, want 1", n)
			}
			if n := c.count("provider_bootstraps WHERE provider_server_id = $1", machines[0].id); n != 1 {
				t.Fatalf("the bootstrap does not record machine %s", machines[0].id)
			}
			env := hostjoin.ParseEnv(writtenFile(t, userData(t, machines[0]), hostjoin.EnvPath))
			c.proc("machine", []string{"BC_JOIN_TOKEN=" + env["BC_JOIN_TOKEN"], "BC_CA_SHA256=" + env["BC_CA_SHA256"]},
				binary(t), "host", "--runtime", "fake", "--server", env["BC_SERVER"], "--heartbeat", "500ms", "--state-dir", t.TempDir())
			c.waitBootstrap(id, "JOINED", 30*time.Second)
		})
	}
}

// TestProviderBootstrapWaits: a reconciler that cannot write a join script
// (no BC_HOST_URL) makes no machine; the bootstrap waits PENDING, saying
// what for.
func TestProviderBootstrapWaits(t *testing.T) {
	t.Parallel()
	cl := hetznerCloud(t)
	c := start(t, options{reconcilers: 1, reconcileArgs: providerArgs, certified: true})
	acct := c.must(c.operator, `mutation($in: CreateProviderAccountInput!) { createProviderAccount(input: $in) { providerAccount { id } } }`,
		map[string]any{"in": map[string]any{"name": "ops", "provider": cl.kind, "credentials": cl.credentials, "settings": cl.settings}},
		"createProviderAccount", "providerAccount", "id")
	id := c.bootstrap(cl, acct, "waits")
	testenv.Eventually(t, 15*time.Second, "the bootstrap's reason", func() bool {
		reason, _ := c.bootstrapOf(id)["stateReason"].(string)
		return strings.Contains(reason, "BC_HOST_URL")
	})
	if b := c.bootstrapOf(id); b["state"] != "PENDING" || len(cl.machines()) != 0 {
		t.Errorf("bootstrap %v with %d machines, want PENDING with none", b, len(cl.machines()))
	}
}
