package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// runDoctorBinary runs `better-compute doctor args` on the database at url
// and returns its exit code and stdout.
func runDoctorBinary(t *testing.T, url string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), append([]string{"doctor"}, args...)...)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "BC_") && name != "DATABASE_URL" && name != "REDIS_URL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DATABASE_URL="+url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("doctor %v: %v", args, err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 && !strings.Contains(stderr.String(), "error-level findings") {
		t.Fatalf("doctor %v failed: exit %d\n%s", args, code, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String()
}

// TestDoctorCommand: `doctor` prints a hosted pool without an IP range as
// an error naming the pool, as text and as JSON, and exits 1; once the pool
// has a range it finds nothing and exits 0.
func TestDoctorCommand(t *testing.T) {
	t.Parallel()
	url := testenv.DatabaseURL(t)
	db := testenv.Open(t, url)
	pool := ids.New()
	if _, err := db.Exec(context.Background(), `INSERT INTO pools (id, name, class, runtime) VALUES ($1, 'bare', 'vps-host', 'libvirt-kvm')`, pool); err != nil {
		t.Fatal(err)
	}
	id := ids.Encode(ids.Pool, pool)

	code, out := runDoctorBinary(t, url)
	if code != 1 || !strings.Contains(out, "error   vps.pools.ipam "+id) || !strings.Contains(out, "what to do: add an IP range") {
		t.Fatalf("doctor: exit %d\n%s\nwant exit 1 and the pool's vps.pools.ipam error", code, out)
	}

	code, out = runDoctorBinary(t, url, "--json")
	var parsed struct {
		Findings []struct {
			Code, Level, Message, Remedy string
			Objects                      []string
		}
	}
	if err := json.Unmarshal([]byte(out), &parsed); err != nil {
		t.Fatalf("doctor --json printed no JSON: %v\n%s", err, out)
	}
	if code != 1 || len(parsed.Findings) != 1 || parsed.Findings[0].Code != "vps.pools.ipam" || parsed.Findings[0].Level != "error" ||
		len(parsed.Findings[0].Objects) != 1 || parsed.Findings[0].Objects[0] != id {
		t.Fatalf("doctor --json: exit %d, %+v; want exit 1 and the pool's vps.pools.ipam error", code, parsed)
	}

	if _, err := db.Exec(context.Background(), `INSERT INTO ip_pools (id, pool_id, cidr, gateway, range_start, range_end) VALUES ($1, $2, '10.1.0.0/24', '10.1.0.1', '10.1.0.10', '10.1.0.20')`, ids.New(), pool); err != nil {
		t.Fatal(err)
	}
	if code, out := runDoctorBinary(t, url); code != 0 || !strings.Contains(out, "no findings") {
		t.Fatalf("doctor on a healthy deployment: exit %d\n%s", code, out)
	}
}

// TestDevSimDoctor: a clean `dev --sim 3`, once its hosts reported, has no
// error-level finding.
func TestDevSimDoctor(t *testing.T) {
	dev := startDev(t, "--sim", "3", "--hetzner-emulator", "127.0.0.1:0", "--proxmox-emulator", "127.0.0.1:0")
	got := map[string]string{}
	dev.read(t, "URL and operator token", func(line string) bool {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (key == "GraphQL" || key == "Operator token") {
			got[key] = strings.TrimSpace(value)
		}
		return len(got) == 2
	})
	query := func(q string, out any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": q})
		req, _ := http.NewRequest("POST", got["GraphQL"], bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+got["Operator token"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "the 3 simulated hosts alive", func() bool {
		var out struct {
			Data struct{ Hosts []struct{ Alive bool } }
		}
		query(`{ hosts { alive } }`, &out)
		alive := 0
		for _, h := range out.Data.Hosts {
			if h.Alive {
				alive++
			}
		}
		return alive == 3
	})
	var out struct {
		Data struct {
			Doctor struct {
				Findings []struct{ Code, Level, Message string }
			}
		}
		Errors []any
	}
	query(`{ doctor { findings { code level message } } }`, &out)
	if len(out.Errors) > 0 {
		t.Fatalf("doctor: %+v", out.Errors)
	}
	for _, f := range out.Data.Doctor.Findings {
		if f.Level == "ERROR" {
			t.Errorf("a clean dev --sim 3 has an error: %s: %s", f.Code, f.Message)
		}
	}
}
