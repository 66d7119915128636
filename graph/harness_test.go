package graph_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/doctor"
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/seal"
)

// env is a GraphQL endpoint on a database of its own, with an operator.
type env struct {
	t        testing.TB
	db       *pgxpool.Pool
	url      string
	client   *http.Client
	sealer   *seal.Sealer
	svc      *control.Service
	log      *slog.Logger
	operator string
}

// testKey is an authorized_keys line the tests use.
var testKey = newKey("test@example")

func newKey(comment string) string {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		panic(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " " + comment
}

// testHostURL is the host listener join commands name.
const testHostURL = "https://hosts.example.com:8443"

func setup(t testing.TB) *env {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with a handler configuration adjusted by tune.
func setupWith(t testing.TB, tune func(*graph.HandlerConfig)) *env {
	t.Helper()
	db := testenv.DB(t)
	sealer, err := seal.New("test secret")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	policy := cloud.Endpoints{Hosts: append(app.DefaultProviderEndpoints(), "pve.example.com")}
	e := &env{
		t: t, db: db, sealer: sealer, log: log,
		// The settings checks the deployment wires in: the drivers', and an
		// operator's endpoint policy that lists a Proxmox for tenants.
		svc: control.New(db, control.Config{Sealer: sealer, Logger: log, ProviderSettings: app.ProviderSettings(policy),
			Runtimes: []string{vps.RuntimeLibvirtKVM, vps.RuntimeFake}, Doctor: doctor.New(doctor.Config{DB: db}),
			HostCA: hostca.New(hostca.Config{DB: db, Sealer: sealer, Logger: log}), HostURL: testHostURL}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
	e.url = e.serve(tune)
	tok, err := e.svc.IssueToken(context.Background(), control.APITokenInput{Name: "test-operator"})
	if err != nil {
		t.Fatal(err)
	}
	e.operator = tok.Secret
	return e
}

// serve starts a GraphQL endpoint on e's database, configured by tune, and
// returns its URL: called again, it is another serve replica.
func (e *env) serve(tune func(*graph.HandlerConfig)) string {
	e.t.Helper()
	cfg := graph.HandlerConfig{Service: e.svc, DB: e.db, Logger: e.log}
	if tune != nil {
		tune(&cfg)
	}
	h := graph.NewHandler(cfg)
	runCtx, stop := context.WithCancel(context.Background())
	e.t.Cleanup(stop)
	go h.Run(runCtx)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(audit.WithRequestID(r.Context(), "req-test")))
	}))
	e.t.Cleanup(srv.Close)
	return srv.URL
}

type gqlError struct {
	Message    string `json:"message"`
	Path       []any  `json:"path"`
	Extensions struct {
		Code  string `json:"code"`
		Field string `json:"field"`
		Limit string `json:"limit"`
		// RetryAfter is in seconds, for RATE_LIMITED.
		RetryAfter int `json:"retryAfter"`
	} `json:"extensions"`
}

type response struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// code is the code of the first error, or "" when there is none.
func (r response) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	return r.Errors[0].Extensions.Code
}

// do runs a GraphQL operation as token.
func (e *env) do(token, query string, vars map[string]any) response {
	e.t.Helper()
	_, r := e.post(e.url, token, query, vars)
	return r
}

// post runs a GraphQL operation as token on the endpoint at url, and
// returns the HTTP response (its body read) with the decoded body.
func (e *env) post(url, token, query string, vars map[string]any) (*http.Response, response) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("POST /graphql: %v", err)
	}
	defer resp.Body.Close()
	var r response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		e.t.Fatalf("decode response (HTTP %d): %v", resp.StatusCode, err)
	}
	return resp, r
}

// must runs an operation that must succeed and decodes its data into out.
func (e *env) must(token, query string, vars map[string]any, out any) {
	e.t.Helper()
	r := e.do(token, query, vars)
	if len(r.Errors) > 0 {
		e.t.Fatalf("%s: %+v", query, r.Errors)
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			e.t.Fatalf("decode data: %v", err)
		}
	}
}

// id runs a mutation that must succeed and returns the id at path.
func (e *env) id(token, query string, vars map[string]any, path ...string) string {
	e.t.Helper()
	var data map[string]any
	e.must(token, query, vars, &data)
	var v any = data
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	return v.(string)
}

func (e *env) tenant(name string) (id, member string) {
	e.t.Helper()
	id = e.id(e.operator, `mutation($n: String!) { createTenant(input: {name: $n}) { tenant { id } } }`,
		map[string]any{"n": name}, "createTenant", "tenant", "id")
	member = e.id(e.operator, `mutation($n: String!, $t: ID) { createApiToken(input: {name: $n, tenantId: $t}) { token } }`,
		map[string]any{"n": name + "-member", "t": id}, "createApiToken", "token")
	return id, member
}

func (e *env) pool(name, class string, tenant any) string {
	e.t.Helper()
	return e.id(e.operator, `mutation($n: String!, $c: String!, $t: ID) { createPool(input: {name: $n, class: $c, tenantId: $t}) { pool { id } } }`,
		map[string]any{"n": name, "c": class, "t": tenant}, "createPool", "pool", "id")
}

func (e *env) flavor(name string, vcpus, memoryMB int) string {
	e.t.Helper()
	return e.id(e.operator, `mutation($n: String!, $v: Int!, $m: Int!) { createFlavor(input: {name: $n, vcpus: $v, memoryMb: $m, diskGb: 10}) { flavor { id } } }`,
		map[string]any{"n": name, "v": vcpus, "m": memoryMB}, "createFlavor", "flavor", "id")
}

func (e *env) image(name, visibility string, tenant any, verified bool) string {
	e.t.Helper()
	return e.id(e.operator, `mutation($n: String!, $vis: Visibility!, $t: ID, $ver: Boolean) {
		registerImage(input: {name: $n, sourceUrl: "https://images.example/debian.qcow2", sha256: "`+sha+`", format: QCOW2, visibility: $vis, tenantId: $t, verified: $ver}) { image { id } } }`,
		map[string]any{"n": name, "vis": visibility, "t": tenant, "ver": verified}, "registerImage", "image", "id")
}

const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

const createInstance = `mutation($in: CreateInstanceInput!) {
	createInstance(input: $in) { instance { id name state desiredState version imageVerified } } }`

// world is a tenant with what it needs to create instances.
type world struct {
	tenant, member      string
	pool, flavor, image string
}

func (e *env) world(name string) world {
	e.t.Helper()
	w := world{}
	w.tenant, w.member = e.tenant(name)
	w.pool = e.pool(name+"-pool", "vps-host", w.tenant)
	w.flavor = e.flavor(name+"-small", 1, 1024)
	w.image = e.image(name+"-debian", "TENANT", w.tenant, true)
	return w
}

// input returns a valid createInstance input in w.
func (w world) input(name string) map[string]any {
	return map[string]any{"poolId": w.pool, "flavorId": w.flavor, "imageId": w.image, "name": name, "sshKeys": []string{testKey}}
}

// count counts rows of a table matching an SQL condition.
func (e *env) count(table, where string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", table, where), args...).Scan(&n); err != nil {
		e.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func decodeInto(t testing.TB, data json.RawMessage, out any) {
	t.Helper()
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("decode data: %v", err)
	}
}
