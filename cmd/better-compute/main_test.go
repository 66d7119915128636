package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/seal"
	"github.com/better-compute/vps/sqlc"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds better-compute once per test process and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "better-compute-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "better-compute")
		buildOut, buildErr = exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

func TestMigrateAndTokenCreate(t *testing.T) {
	url := testenv.EmptyDatabaseURL(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary(t), args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	run("migrate")
	token := run("token", "create", "--name", "ops-alice", "--expires", "1h")
	if !strings.HasPrefix(token, "bct_") {
		t.Fatalf("token create printed %q", token)
	}
	db := testenv.Open(t, url)
	p, err := iam.Authenticate(t.Context(), sqlc.New(db), token)
	if err != nil || !p.IsOperator() || p.Name != "ops-alice" || p.ExpiresAt.IsZero() {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	var actions int
	db.QueryRow(t.Context(), "SELECT count(*) FROM audit_events WHERE action = 'apiToken.create' AND request_id = 'cli'").Scan(&actions)
	if actions != 1 {
		t.Fatalf("token create audited %d times, want 1", actions)
	}
}

// TestMigrateRefusesAnotherBuildsSchema runs `better-compute migrate` on a
// database migrated before the vps migrations were renumbered: it fails,
// naming the module and version, and applies nothing.
func TestMigrateRefusesAnotherBuildsSchema(t *testing.T) {
	url := testenv.BeforeFoldDatabaseURL(t, 5)
	cmd := exec.Command(binary(t), "migrate")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "schema vps has version 5 applied") {
		t.Fatalf("migrate: %v\n%s\nwant a failure naming vps version 5", err, out)
	}
	var versions string
	err = testenv.Open(t, url).QueryRow(t.Context(), "SELECT string_agg(version_id::text, ',' ORDER BY id) FROM goose_vps").Scan(&versions)
	if err != nil || versions != "0,1,2,3,4,5" {
		t.Fatalf("goose_vps holds %s, %v; want 0,1,2,3,4,5", versions, err)
	}
}

// TestHostCA runs `better-compute host-ca` as an operator rotating the
// host CA: a new CA signs host certificates beside the old, which keeps
// signing the server's until it is retired; the last cannot be.
func TestHostCA(t *testing.T) {
	url := testenv.EmptyDatabaseURL(t)
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(binary(t), args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "BC_SECRET=s")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run("migrate"); err != nil {
		t.Fatal(out)
	}
	first, err := run("host-ca")
	if err != nil || strings.Count(first, "trusted") != 1 {
		t.Fatalf("first host-ca: %v\n%s", err, first)
	}
	rotated, err := run("host-ca", "--rotate")
	if err != nil || !strings.Contains(rotated, "made host CA") || !strings.Contains(rotated, "trusted, signs the server certificate") ||
		!strings.Contains(rotated, "trusted, signs host certificates") {
		t.Fatalf("host-ca --rotate: %v\n%s", err, rotated)
	}
	oldID := caIDs(first)[0]
	retired, err := run("host-ca", "--retire", oldID)
	if err != nil || !strings.Contains(retired, "retired ") || !strings.Contains(retired, "signs host and server certificates") {
		t.Fatalf("host-ca --retire: %v\n%s", err, retired)
	}
	newID := caIDs(retired)[1]
	if out, err := run("host-ca", "--retire", newID); err == nil || !strings.Contains(out, "only host CA") {
		t.Fatalf("retiring the last CA: %v\n%s", err, out)
	}
}

// caIDs are the IDs host-ca lists, in its order.
func caIDs(out string) []string {
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			if _, err := uuid.Parse(f[0]); err == nil {
				ids = append(ids, f[0])
			}
		}
	}
	return ids
}

// TestReseal runs `better-compute reseal` as an operator would after a
// rotation: it reports what it sealed again and audits the run.
func TestReseal(t *testing.T) {
	url := testenv.EmptyDatabaseURL(t)
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary(t), args...)
		cmd.Env = append(os.Environ(), append([]string{"DATABASE_URL=" + url}, env...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(nil, "migrate")
	db := testenv.Open(t, url)
	old, _ := seal.New("old")
	id := ids.New()
	if _, err := db.Exec(t.Context(), "INSERT INTO provider_accounts (id, provider, name, credentials_sealed) VALUES ($1, 'hetzner', 'burst', $2)",
		id, old.Seal([]byte("token"), id[:])); err != nil {
		t.Fatal(err)
	}
	run([]string{"BC_SECRET=old"}, "host-ca") // makes the first host CA, its key sealed under old
	if out := run([]string{"BC_SECRET=new", "BC_SECRET_PREVIOUS=old"}, "reseal"); out != "sealed again: 0 user data, 1 provider credentials, 1 host CA keys" {
		t.Fatalf("reseal printed %q", out)
	}
	if out := run([]string{"BC_SECRET=new"}, "host-ca"); !strings.Contains(out, "signs host and server certificates") {
		t.Fatalf("host-ca under the new secret alone printed %q", out)
	}
	var sealed []byte
	db.QueryRow(t.Context(), "SELECT credentials_sealed FROM provider_accounts WHERE id = $1", id).Scan(&sealed)
	newOnly, _ := seal.New("new")
	if _, err := newOnly.Open(sealed, id[:]); err != nil {
		t.Fatalf("the credentials do not open with the new secret alone: %v", err)
	}
	var audited int
	db.QueryRow(t.Context(), "SELECT count(*) FROM audit_events WHERE action = 'secrets.reseal' AND request_id = 'reseal'").Scan(&audited)
	if audited != 1 {
		t.Fatalf("reseal audited %d times, want 1", audited)
	}
}
