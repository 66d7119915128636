package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
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
