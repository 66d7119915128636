package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/cli"
)

// TestCLI drives bcctl against `better-compute dev --sim 2`: login saves
// a context (its file readable by its owner only), an instance created
// with --wait shows each state on one line as it happens, lists as JSON,
// streams its events while another command stops it, reboots through its
// host, and is deleted with --wait; a sandbox from a template is created,
// extended, snapshotted and deleted; a wrong token, an unknown ID, a taken
// name, a quota and a bad command line each exit with their own code and a
// one-line message.
func TestCLI(t *testing.T) {
	t.Parallel()
	dev := startDev(t)
	pick := dev.catalog(t)
	pool, flavor, image := pick("pools", "sim"), pick("flavors", "small"), pick("images", "debian-12")
	viewer := dev.gql(t, dev.member, `{ viewer { principal { tenant { id } } } }`, nil)
	tenant := viewer["viewer"].(map[string]any)["principal"].(map[string]any)["tenant"].(map[string]any)["id"].(string)
	setQuota := func(instances int) {
		dev.gql(t, dev.operator, `mutation($t: ID!, $n: Int!) { setQuota(input: {tenantId: $t, instances: $n}) { tenant { id } } }`,
			map[string]any{"t": tenant, "n": instances})
	}
	config := filepath.Join(t.TempDir(), "config.json")
	key := filepath.Join(t.TempDir(), "id.pub")
	if err := os.WriteFile(key, []byte(sshKey), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BC_CONFIG": config}
	type result struct {
		code           int
		stdout, stderr string
	}
	bcctl := func(args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		code := cli.Run(ctx, args, &stdout, &stderr, func(k string) string { return env[k] })
		return result{code, stdout.String(), stderr.String()}
	}
	endpoint := dev.url + "/graphql"
	create := []string{"instance", "create", "--pool", pool, "--flavor", flavor, "--image", image, "--ssh-key", "@" + key}

	t.Run("--version says the build", func(t *testing.T) {
		if r := bcctl("--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "bcctl version ") || !strings.Contains(r.stdout, "commit ") {
			t.Fatalf("exit %d: %q", r.code, r.stdout)
		}
	})
	t.Run("a wrong token is refused at login", func(t *testing.T) {
		r := bcctl("login", "--endpoint", endpoint, "--token", "bct_nope")
		if r.code != cli.ExitAuth || !strings.HasPrefix(r.stderr, "bcctl: ") || strings.Count(r.stderr, "\n") != 1 {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		if _, err := os.Stat(config); !os.IsNotExist(err) {
			t.Fatalf("a refused login saved a context: %v", err)
		}
	})
	t.Run("login saves the context for its owner only", func(t *testing.T) {
		r := bcctl("login", "--endpoint", endpoint, "--token", dev.member)
		if r.code != cli.ExitOK || !strings.Contains(r.stdout, "Logged in") {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		fi, err := os.Stat(config)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("config file: %v, %v", fi.Mode(), err)
		}
	})
	t.Run("the catalog lists the IDs create takes", func(t *testing.T) {
		for kind, want := range map[string]string{"pool": pool, "flavor": flavor, "image": image} {
			r := bcctl(kind, "list", "-o", "json")
			var list []struct{ ID string }
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || !slices.ContainsFunc(list, func(x struct{ ID string }) bool { return x.ID == want }) {
				t.Errorf("%s list: exit %d, %v: %s", kind, r.code, err, r.stdout)
			}
		}
	})
	var id string
	t.Run("create --wait shows each state, then the instance", func(t *testing.T) {
		r := bcctl(append(create, "web-1", "--wait", "-o", "json")...)
		if r.code != cli.ExitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		progress := strings.TrimSpace(r.stderr)
		if !strings.HasPrefix(progress, "web-1: PENDING → ") || !strings.HasSuffix(progress, " → RUNNING") || strings.Contains(progress, "\n") {
			t.Fatalf("progress line %q", progress)
		}
		var inst struct{ ID, State string }
		if err := json.Unmarshal([]byte(r.stdout), &inst); err != nil || inst.State != "RUNNING" {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		id = inst.ID
	})
	t.Run("list as JSON", func(t *testing.T) {
		r := bcctl("instance", "list", "-o", "json")
		var list []struct{ ID, Name, State string }
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].ID != id || list[0].Name != "web-1" {
			t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
		}
	})
	t.Run("get as YAML and as a table", func(t *testing.T) {
		if r := bcctl("instance", "get", id, "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "name: web-1") {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if r := bcctl("instance", "get", id); r.code != 0 || !strings.HasPrefix(r.stdout, "ID") || !strings.Contains(r.stdout, "web-1") {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("refusals exit by class, in one line", func(t *testing.T) {
		setQuota(1)
		for _, tc := range []struct {
			name string
			args []string
			code int
		}{
			{"an unknown ID", []string{"instance", "get", "ins_00000000000000000000000000"}, cli.ExitNotFound},
			{"a taken name", append(create, "web-1"), cli.ExitConflict},
			{"over the quota", append(create, "web-2"), cli.ExitLimited},
			{"an unknown command", []string{"instance", "frobnicate"}, cli.ExitUsage},
			{"a missing flag", []string{"instance", "create", "web-3"}, cli.ExitUsage},
			{"an unknown output", []string{"instance", "list", "-o", "xml"}, cli.ExitUsage},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := bcctl(tc.args...)
				if r.code != tc.code || !strings.HasPrefix(r.stderr, "bcctl: ") || strings.Count(r.stderr, "\n") != 1 {
					t.Fatalf("exit %d (want %d), stderr %q", r.code, tc.code, r.stderr)
				}
			})
		}
	})
	t.Run("events stream while another command stops it", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pr, pw := io.Pipe()
		ended := make(chan int)
		go func() {
			var stderr bytes.Buffer
			code := cli.Run(ctx, []string{"events", "--id", id, "-o", "json"}, pw, &stderr, func(k string) string { return env[k] })
			pw.Close()
			ended <- code
		}()
		// The stream is open once a first change is seen: keep stopping
		// (a repeat is harmless) until STOPPED comes through.
		lines := bufio.NewScanner(pr)
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for lines.Scan() {
				var ev struct {
					Instance struct{ State string }
				}
				if json.Unmarshal(lines.Bytes(), &ev) == nil && ev.Instance.State == "STOPPED" {
					return
				}
			}
		}()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(30 * time.Second)
		for waiting := true; waiting; {
			select {
			case <-stopped:
				waiting = false
			case <-tick.C:
				bcctl("instance", "stop", id)
			case <-deadline:
				t.Fatal("no STOPPED event streamed")
			}
		}
		cancel()
		copied := make(chan struct{})
		go func() { io.Copy(io.Discard, pr); close(copied) }()
		code := <-ended
		<-copied
		if code != cli.ExitOK {
			t.Fatalf("events exited %d", code)
		}
	})
	t.Run("reboot --wait goes through its host and runs again", func(t *testing.T) {
		if r := bcctl("instance", "start", id, "--wait"); r.code != 0 {
			t.Fatalf("start: exit %d: %s", r.code, r.stderr)
		}
		r := bcctl("instance", "reboot", id, "--wait", "-o", "json")
		var inst struct{ State, StateReason string }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &inst) != nil || inst.State != "RUNNING" || inst.StateReason != "" ||
			strings.TrimSpace(r.stderr) != "web-1: REBOOTING → RUNNING" {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		var done int
		if err := dev.db(t).QueryRow(t.Context(), "SELECT count(*) FROM host_commands WHERE kind = 'instance.reboot' AND state = 'SUCCEEDED'").Scan(&done); err != nil || done != 1 {
			t.Fatalf("reboot commands succeeded: %d, %v", done, err)
		}
		if r := bcctl("instance", "reboot", "ins_00000000000000000000000000"); r.code != cli.ExitNotFound {
			t.Fatalf("an unknown instance: exit %d: %s", r.code, r.stderr)
		}
	})
	t.Run("stop and delete --wait", func(t *testing.T) {
		if r := bcctl("instance", "stop", id, "--wait"); r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.stderr), "STOPPED") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if r := bcctl("instance", "reboot", id); r.code != cli.ExitConflict || !strings.Contains(r.stderr, "only a RUNNING instance reboots") {
			t.Fatalf("a stopped instance rebooted: exit %d: %s", r.code, r.stderr)
		}
		if r := bcctl("instance", "delete", id, "--wait"); r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.stderr), "DELETED") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		// Starting it again is refused: it is gone.
		if r := bcctl("instance", "start", id); r.code == 0 {
			t.Fatalf("a deleted instance started: %s", r.stdout)
		}
	})
	t.Run("a sandbox from a template: create --wait, extend, snapshot, delete", func(t *testing.T) {
		setQuota(10)
		r := bcctl("template", "create", "ci", "--pool", pool, "--flavor", flavor, "--image", image, "--ssh-key", "@"+key, "-o", "json")
		var tmpl struct{ ID string }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tmpl) != nil {
			t.Fatalf("template create: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		r = bcctl("sandbox", "create", "--template", tmpl.ID, "--wait", "-o", "json")
		var sbx struct{ ID, State string }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &sbx) != nil || sbx.State != "RUNNING" || !strings.HasSuffix(strings.TrimSpace(r.stderr), "RUNNING") {
			t.Fatalf("sandbox create --wait: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		r = bcctl("sandbox", "extend", sbx.ID, "--timeout-in", "45m", "-o", "json")
		var extended struct{ ExpiresAt time.Time }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &extended) != nil || time.Until(extended.ExpiresAt) < 40*time.Minute {
			t.Fatalf("extend: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		r = bcctl("sandbox", "snapshot", sbx.ID, "before-tests", "-o", "json")
		var snap struct{ ID, Name, State string }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &snap) != nil || snap.Name != "before-tests" {
			t.Fatalf("snapshot: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if r := bcctl("snapshot", "list", "--sandbox", sbx.ID, "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, snap.ID) {
			t.Fatalf("snapshot list: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if r := bcctl("sandbox", "delete", sbx.ID, "--wait"); r.code != 0 {
			t.Fatalf("sandbox delete: exit %d: %s", r.code, r.stderr)
		}
	})
}
