package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/migrations"
)

// TestDev runs `better-compute dev` as a newcomer would, with nothing
// configured, and checks it serves within 10 seconds and answers a query
// with the token it printed.
func TestDev(t *testing.T) {
	stateDir := t.TempDir()
	cmd := exec.Command(binary(t), "dev", "--sim", "2", "--listen", "127.0.0.1:0", "--state-dir", stateDir)
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
		// dev made its own database on the local server, if one runs.
		if conn, err := pgx.Connect(context.Background(), devenv.LocalServer); err == nil {
			conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+devenv.SharedDatabase(stateDir))
			conn.Close(context.Background())
		}
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

	member := func(query string, vars map[string]any) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req, _ := http.NewRequest("POST", got["GraphQL"], bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+got["Member token"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	waitRunning := func(t *testing.T, where, id, address string) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			b := member(`query($id: ID!) { instance(id: $id) { state addresses } }`, map[string]any{"id": id})
			if strings.Contains(b, `"state":"RUNNING"`) && strings.Contains(b, address) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not RUNNING %s: %s\n%s", where, b, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	t.Run("the printed walk-through runs an instance", func(t *testing.T) {
		out, err := exec.Command("bash", "-c", got["curl"]).Output()
		if err != nil || !strings.Contains(string(out), `"state":"PENDING"`) {
			t.Fatalf("the printed curl: %s, %v", out, err)
		}
		var created struct {
			Data struct {
				CreateInstance struct{ Instance struct{ ID string } }
			}
		}
		json.Unmarshal(out, &created)
		waitRunning(t, "on a simulated host", created.Data.CreateInstance.Instance.ID, "10.77.0.")
	})

	t.Run("an instance runs on each emulated provider", func(t *testing.T) {
		var catalog struct {
			Data struct{ Pools, Flavors, Images []struct{ ID, Name string } }
		}
		json.Unmarshal([]byte(member(`{ pools { id name } flavors { id name } images { id name } }`, nil)), &catalog)
		id := func(items []struct{ ID, Name string }, name string) string {
			for _, it := range items {
				if it.Name == name {
					return it.ID
				}
			}
			t.Fatalf("dev seeded no %s: %+v", name, catalog)
			return ""
		}
		for _, c := range []struct{ pool, address string }{{"hetzner-emulated", "."}, {"proxmox-emulated", ""}} {
			in := map[string]any{"poolId": id(catalog.Data.Pools, c.pool), "flavorId": id(catalog.Data.Flavors, "cloud-small"),
				"imageId": id(catalog.Data.Images, "debian-12-cloud"), "name": fmt.Sprintf("burst-%s-%d", c.pool, time.Now().UnixNano()%1e6), "sshKeys": []string{demoKey}}
			b := member(`mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`, map[string]any{"in": in})
			var created struct {
				Data struct {
					CreateInstance struct{ Instance struct{ ID string } }
				}
			}
			if err := json.Unmarshal([]byte(b), &created); err != nil || created.Data.CreateInstance.Instance.ID == "" {
				t.Fatalf("create in %s: %s", c.pool, b)
			}
			waitRunning(t, "in "+c.pool, created.Data.CreateInstance.Instance.ID, c.address)
		}
	})
}

// TestDevRecreatesAnotherBuildsDatabase gives dev a database of its own
// made before the vps migrations were renumbered: dev says it recreates it,
// and serves on the new one.
func TestDevRecreatesAnotherBuildsDatabase(t *testing.T) {
	stateDir := t.TempDir()
	db := devenv.SharedDatabase(stateDir)
	old := testenv.BeforeFoldDatabaseURL(t, 5)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, devenv.LocalServer)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	oldCfg, err := pgx.ParseConfig(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+oldCfg.Database+" RENAME TO "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })

	cmd := exec.Command(binary(t), "dev", "--listen", "127.0.0.1:0", "--state-dir", stateDir)
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
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	running := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Better Compute is running") {
				running <- true
				return
			}
		}
		running <- false
	}()
	select {
	case ok := <-running:
		if !ok {
			cmd.Wait()
			t.Fatalf("dev stopped; stderr:\n%s", stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("dev is not running after 20 s; stderr:\n%s", stderr.String())
	}
	if log := stderr.String(); !strings.Contains(log, "recreating the dev database") || !strings.Contains(log, "database="+db) {
		t.Errorf("dev did not say it recreates %s; stderr:\n%s", db, log)
	}
	pool := testenv.Open(t, strings.Replace(devenv.LocalServer, "/postgres?", "/"+db+"?", 1))
	if err := migrations.Current(ctx, pool); err != nil {
		t.Errorf("dev's database after dev: %v", err)
	}
}
