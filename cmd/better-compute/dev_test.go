package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDev runs `better-compute dev` as a newcomer would, with nothing
// configured, and checks it serves within 10 seconds and answers a query
// with the token it printed.
func TestDev(t *testing.T) {
	cmd := exec.Command(binary(t), "dev", "--sim", "2", "--listen", "127.0.0.1:0", "--state-dir", t.TempDir())
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "DATABASE_URL", "REDIS_URL", "BC_SECRET", "BC_BOOTSTRAP_TOKEN":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})

	printed := make(chan map[string]string, 1)
	go func() {
		got := map[string]string{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
			switch {
			case ok && (key == "GraphQL" || key == "Operator token"):
				got[key] = strings.TrimSpace(value)
			case ok && key == "Member token":
				got[key], _, _ = strings.Cut(strings.TrimSpace(value), " ")
			case strings.HasPrefix(strings.TrimSpace(sc.Text()), "curl -s"):
				got["curl"] = strings.TrimSpace(sc.Text())
			}
			if len(got) == 4 {
				printed <- got
				return
			}
		}
	}()
	var got map[string]string
	select {
	case got = <-printed:
	case <-time.After(10 * time.Second):
		t.Fatalf("dev printed no URL and token within 10 s; stderr:\n%s", stderr.String())
	}

	req, _ := http.NewRequest("POST", got["GraphQL"], strings.NewReader(`{"query":"{ viewer { principal { role } } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+got["Operator token"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Viewer struct{ Principal struct{ Role string } }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Data.Viewer.Principal.Role != "OPERATOR" {
		t.Fatalf("viewer = %+v, %v", body, err)
	}
	took := time.Since(start)
	if took > 10*time.Second {
		t.Fatalf("dev answered after %v, want within 10 s", took)
	}
	t.Logf("dev answered a query %v after it started", took.Round(time.Millisecond))

	t.Run("the printed walk-through runs an instance", func(t *testing.T) {
		out, err := exec.Command("bash", "-c", got["curl"]).Output()
		if err != nil || !strings.Contains(string(out), `"state":"PENDING"`) {
			t.Fatalf("the printed curl: %s, %v", out, err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			req, _ := http.NewRequest("POST", got["GraphQL"], strings.NewReader(`{"query":"{ instances { nodes { state addresses } } }"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+got["Member token"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `"state":"RUNNING"`) && strings.Contains(string(b), `10.77.0.`) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not RUNNING on a simulated host: %s\n%s", b, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}
