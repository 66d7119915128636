package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/drivers/cloud/proxmox/proxmoxtest"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/migrations"
)

// devProcess is a `better-compute dev` under test, its stdout read line
// by line.
type devProcess struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	// lines are dev's stdout; closed when dev has exited, after exit is set.
	lines chan string
	// exit is how dev exited (cmd.Wait's error).
	exit error
	// started is when it was started.
	started time.Time
}

// lockedBuffer is dev's stderr, read while dev writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startDev runs `better-compute dev` with args as a newcomer would, with
// nothing configured, in a state directory of its own, and stops it when
// the test ends.
func startDev(t *testing.T, args ...string) *devProcess {
	t.Helper()
	return startDevIn(t, t.TempDir(), args...)
}

// startDevIn is startDev in stateDir.
func startDevIn(t *testing.T, stateDir string, args ...string) *devProcess {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"dev", "--listen", "127.0.0.1:0", "--state-dir", stateDir}, args...)...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "DATABASE_URL", "REDIS_URL", "BC_SECRET", "BC_BOOTSTRAP_TOKEN":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	d := &devProcess{cmd: cmd, stderr: &lockedBuffer{}, lines: make(chan string, 1000)}
	cmd.Stderr = d.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.stop()
		// dev made its own database on the local server, if one runs.
		if conn, err := pgx.Connect(context.Background(), devenv.LocalServer); err == nil {
			conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+devenv.SharedDatabase(stateDir))
			conn.Close(context.Background())
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		// Wait after the last read, as exec requires; it returns when
		// all of stderr is in d.stderr too.
		d.exit = cmd.Wait()
		close(d.lines)
	}()
	return d
}

// stop interrupts dev and returns when it has exited; then d.stderr is
// all dev wrote there. Calling it again does nothing.
func (d *devProcess) stop() {
	d.cmd.Process.Signal(os.Interrupt) // fails harmlessly once dev has exited
	for range d.lines {                // until dev has exited
	}
}

// devWait bounds each wait for dev's output. It is generous: it only ends a
// test of a dev that hangs, and dev starts a database, migrates it and
// starts its hosts on a machine that may be loaded.
const devWait = 2 * time.Minute

// read passes dev's stdout, line by line, to done until it returns true;
// it fails the test after devWait, or when dev exits, naming what is
// awaited and showing dev's stderr (and exit status).
func (d *devProcess) read(t *testing.T, awaited string, done func(line string) bool) {
	t.Helper()
	deadline := time.After(devWait)
	for {
		select {
		case line, ok := <-d.lines:
			if !ok {
				t.Fatalf("dev exited (%v) %v after it started, before it printed %s; stderr:\n%s",
					d.exit, time.Since(d.started).Round(time.Millisecond), awaited, d.stderr.String())
			}
			if done(line) {
				return
			}
		case <-deadline:
			t.Fatalf("dev printed no %s within %v; stderr so far:\n%s", awaited, devWait, d.stderr.String())
		}
	}
}

// TestDev runs `better-compute dev` as a newcomer would, with nothing
// configured, and checks it serves and answers a query with the token it
// printed, and that a host joins by the join command
// createHost gives, as written, at the host listener it printed. Its
// emulators listen on free ports, so that it needs no port to be free.
func TestDev(t *testing.T) {
	dev := startDev(t, "--sim", "2", "--hetzner-emulator", "127.0.0.1:0", "--proxmox-emulator", "127.0.0.1:0")
	start := dev.started
	got := map[string]string{}
	dev.read(t, "URL and token", func(line string) bool {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case ok && (key == "GraphQL" || key == "Operator token"):
			got[key] = strings.TrimSpace(value)
		case ok && (key == "Member token" || key == "Host listener"):
			got[key], _, _ = strings.Cut(strings.TrimSpace(value), " ")
		case strings.HasPrefix(strings.TrimSpace(line), "curl -s"):
			got["curl"] = strings.TrimSpace(line)
		}
		return len(got) == 5
	})

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
	t.Logf("dev answered a query %v after it started", time.Since(start).Round(time.Millisecond))

	as := func(token, query string, vars map[string]any) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req, _ := http.NewRequest("POST", got["GraphQL"], bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	member := func(query string, vars map[string]any) string {
		t.Helper()
		return as(got["Member token"], query, vars)
	}
	waitRunning := func(t *testing.T, where, id, address string) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			b := member(`query($id: ID!) { instance(id: $id) { state addresses } }`, map[string]any{"id": id})
			if strings.Contains(b, `"state":"RUNNING"`) && strings.Contains(b, address) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not RUNNING %s: %s\n%s", where, b, dev.stderr.String())
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

	t.Run("a host joins by its join command as written, at the printed host listener", func(t *testing.T) {
		var pools struct {
			Data struct{ Pools []struct{ ID, Name string } }
		}
		json.Unmarshal([]byte(as(got["Operator token"], `{ pools { id name } }`, nil)), &pools)
		pool := ""
		for _, p := range pools.Data.Pools {
			if p.Name == devenv.SimPool {
				pool = p.ID
			}
		}
		var created struct {
			Data struct {
				CreateHost struct {
					JoinCommand string
					Host        struct{ ID string }
				}
			}
		}
		b := as(got["Operator token"], `mutation($p: ID!) { createHost(input: {poolId: $p, name: "joined-by-command", bearerCredential: false}) { joinCommand host { id } } }`,
			map[string]any{"p": pool})
		json.Unmarshal([]byte(b), &created)
		command := strings.Fields(created.Data.CreateHost.JoinCommand)
		if len(command) < 2 || command[0] != "better-compute" || !strings.Contains(created.Data.CreateHost.JoinCommand, "--server "+got["Host listener"]+" ") {
			t.Fatalf("createHost: %s; want a join command naming the printed host listener %s", b, got["Host listener"])
		}
		host := exec.Command(binary(t), append(command[1:], "--runtime", "fake", "--state-dir", t.TempDir(), "--heartbeat", "500ms")...)
		var hostLog lockedBuffer
		host.Stdout, host.Stderr = &hostLog, &hostLog
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { host.Process.Signal(os.Interrupt); host.Wait() })
		deadline := time.Now().Add(30 * time.Second)
		for {
			b := as(got["Operator token"], `{ hosts { id certified alive } }`, nil)
			var hosts struct {
				Data struct {
					Hosts []struct {
						ID               string
						Certified, Alive bool
					}
				}
			}
			json.Unmarshal([]byte(b), &hosts)
			joined := false
			for _, h := range hosts.Data.Hosts {
				joined = joined || (h.ID == created.Data.CreateHost.Host.ID && h.Certified && h.Alive)
			}
			if joined {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the host did not join and report: %s\nits log:\n%s", b, hostLog.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("with 8091 and 8092 taken, dev serves its emulators on free ports and prints them", func(t *testing.T) {
		for _, addr := range []string{devenv.DefaultHetznerAddr, devenv.DefaultProxmoxAddr} {
			ln, err := net.Listen("tcp", addr)
			switch {
			case err == nil:
				t.Cleanup(func() { ln.Close() })
			case errors.Is(err, syscall.EADDRINUSE): // another process holds it: as good
			default:
				t.Fatal(err)
			}
		}
		other := startDev(t, "--sim", "1")
		printed := regexp.MustCompile(`^Emulated providers: Hetzner Cloud at (\S+), Proxmox VE at (\S+)\.$`)
		var urls []string
		other.read(t, "emulated providers", func(line string) bool {
			if m := printed.FindStringSubmatch(line); m != nil {
				urls = m[1:]
			}
			return urls != nil
		})
		for i, c := range []struct {
			taken, path, query, auth string
		}{
			{devenv.DefaultHetznerAddr, "/v1", "/servers", "Bearer " + hetznertest.DefaultToken},
			{devenv.DefaultProxmoxAddr, "/api2/json", "/cluster/resources", "PVEAPIToken=" + proxmoxtest.DefaultTokenID + "=" + proxmoxtest.DefaultSecret},
		} {
			u, err := url.Parse(urls[i])
			if err != nil || u.Host == c.taken || u.Hostname() != "127.0.0.1" || u.Path != c.path {
				t.Fatalf("dev printed %s; want an emulator on another port of 127.0.0.1 than %s, %v", urls[i], c.taken, err)
			}
			req, _ := http.NewRequest("GET", urls[i]+c.query, nil)
			req.Header.Set("Authorization", c.auth)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", req.URL, resp.Status)
			}
		}
		if !strings.Contains(other.stderr.String(), "emulator address taken") {
			t.Errorf("dev did not say the emulators moved; stderr:\n%s", other.stderr.String())
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

	dev := startDevIn(t, stateDir)
	dev.read(t, "that it is running", func(line string) bool { return strings.Contains(line, "Better Compute is running") })
	dev.stop() // so that its stderr is all there
	if log := dev.stderr.String(); !strings.Contains(log, "recreating the dev database") || !strings.Contains(log, "database="+db) {
		t.Errorf("dev did not say it recreates %s; stderr:\n%s", db, log)
	}
	pool := testenv.Open(t, strings.Replace(devenv.LocalServer, "/postgres?", "/"+db+"?", 1))
	if err := migrations.Current(ctx, pool); err != nil {
		t.Errorf("dev's database after dev: %v", err)
	}
}
