package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
)

// protocol is the version recorded for the env's host, 0 for none.
func (e *env) protocol() int {
	e.t.Helper()
	var v *int16
	if err := e.db.QueryRow(context.Background(), "SELECT protocol FROM hosts WHERE id = $1", e.host).Scan(&v); err != nil {
		e.t.Fatal(err)
	}
	if v == nil {
		return 0
	}
	return int(*v)
}

// body reads a response's body.
func body(t testing.TB, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// countingHandler counts the warnings logged through it.
type countingHandler struct {
	slog.Handler
	warnings *atomic.Int32
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.warnings.Add(1)
	}
	return nil
}

// TestOlderProtocol: a host daemon of protocol 1 is served on its own
// paths: its spec is rendered for version 1, its reports (without stats)
// are accepted, and the version it speaks is recorded; once it speaks 2
// again, the pool's pending instances are woken. A host of version 1 that
// holds a sandbox's instance (its daemon was downgraded) is refused its
// spec, logged once.
func TestOlderProtocol(t *testing.T) {
	t.Parallel()
	var warnings atomic.Int32
	e := setup(t, func(c *gateway.Config) {
		c.Logger = slog.New(countingHandler{Handler: slog.NewTextHandler(io.Discard, nil), warnings: &warnings})
	})
	gen := e.place("running")
	id := ids.Encode(ids.Instance, e.instance)

	t.Run("a plain instance's spec is served at version 1", func(t *testing.T) {
		resp := e.requestAt(1, "GET", hostproto.SpecPathOf(1)+"?after=0&wait=0", e.credential, nil)
		raw := body(t, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		var spec hostproto.NodeSpec
		if err := json.Unmarshal([]byte(raw), &spec); err != nil {
			t.Fatal(err)
		}
		if spec.Protocol != 1 || spec.Generation != gen || len(spec.Instances) != 1 || spec.Instances[0].ID != id || spec.Instances[0].Power != hostproto.PowerRunning {
			t.Fatalf("spec = %s", raw)
		}
		if strings.Contains(raw, "env") || strings.Contains(raw, "networkPolicy") {
			t.Fatalf("a version 1 spec with version 2 fields: %s", raw)
		}
		if got := e.protocol(); got != 1 {
			t.Fatalf("protocol recorded from the spec poll = %d, want 1", got)
		}
	})
	t.Run("a version 1 report is accepted and its protocol recorded", func(t *testing.T) {
		e.exec("UPDATE hosts SET protocol = NULL WHERE id = $1", e.host)
		// Stats are not version 1's: dropped, not checked (these would be
		// refused at version 2: a stopped instance has none).
		rep := json.RawMessage(`{"protocol":1,"generation":` + strconv.FormatInt(gen, 10) + `,"instances":[{"id":"` + id + `","state":"stopped","stats":{"cpuTimeNs":1,"memoryBytes":1}}]}`)
		resp := e.requestAt(1, "POST", hostproto.ReportPathOf(1), e.credential, rep)
		if resp.StatusCode != 204 {
			t.Fatalf("%d %s", resp.StatusCode, body(t, resp.Body))
		}
		var observed string
		e.db.QueryRow(context.Background(), "SELECT observed_state FROM instances WHERE id = $1", e.instance).Scan(&observed)
		if observed != "stopped" || e.protocol() != 1 {
			t.Fatalf("observed %q, protocol %d; want stopped, 1", observed, e.protocol())
		}
	})
	t.Run("a report's protocol must be its path's", func(t *testing.T) {
		resp := e.requestAt(1, "POST", hostproto.ReportPathOf(1), e.credential, hostproto.Report{Protocol: 2, Generation: gen})
		if b := body(t, resp.Body); resp.StatusCode != 400 || !strings.HasPrefix(b, "protocol: ") {
			t.Fatalf("%d %q, want 400 naming protocol", resp.StatusCode, b)
		}
	})

	ctx := iam.WithPrincipal(context.Background(), control.System)
	tmpl, err := e.svc.CreateSandboxTemplate(ctx, control.SandboxTemplateInput{TenantID: e.tenant, Name: "py", PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image})
	if err != nil {
		t.Fatal(err)
	}
	sbx, err := e.svc.CreateSandbox(ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: tmpl.ID})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("upgraded to the current version, the pool's pending instances are woken", func(t *testing.T) {
		wakes := func() int {
			var n int
			e.db.QueryRow(context.Background(), "SELECT count(*) FROM outbox WHERE key = $1 AND payload IS NULL", sbx.InstanceID).Scan(&n)
			return n
		}
		before := wakes()
		resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: gen})
		if resp.StatusCode != 204 {
			t.Fatalf("%d %s", resp.StatusCode, body(t, resp.Body))
		}
		if e.protocol() != hostproto.Version || wakes() != before+1 {
			t.Fatalf("protocol %d, sandbox instance woken %d times; want %d, once", e.protocol(), wakes()-before, hostproto.Version)
		}
	})

	sbxGen := e.placeOn(sbx.InstanceID, "running")
	sbxID := ids.Encode(ids.Instance, sbx.InstanceID)
	t.Run("downgraded to version 1 while holding a sandbox's instance, it is refused its spec", func(t *testing.T) {
		for range 2 {
			resp := e.requestAt(1, "GET", hostproto.SpecPathOf(1)+"?after=0&wait=0", e.credential, nil)
			b := body(t, resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(b, sbxID) || !strings.Contains(b, "protocol 1") || strings.Contains(b, id) {
				t.Fatalf("%d %q, want 400 naming %s and the version", resp.StatusCode, b, sbxID)
			}
		}
		if n := warnings.Load(); n != 1 {
			t.Fatalf("refusal logged %d times, want once", n)
		}
		if e.protocol() != 1 {
			t.Fatalf("protocol %d, want 1", e.protocol())
		}
		// It still reports, so its instances are not LOST.
		resp := e.requestAt(1, "POST", hostproto.ReportPathOf(1), e.credential, hostproto.Report{Protocol: 1, Generation: gen})
		if resp.StatusCode != 204 {
			t.Fatalf("report: %d %s", resp.StatusCode, body(t, resp.Body))
		}
	})
	t.Run("at the current version again it gets its spec", func(t *testing.T) {
		spec, code := e.spec(0, 0)
		if code != 200 || spec.Protocol != hostproto.Version || spec.Generation != sbxGen || len(spec.Instances) != 2 {
			t.Fatalf("%d %+v", code, spec)
		}
	})
}

// TestUnknownProtocol: versions outside [MinVersion, Version] are refused
// with 400 saying what to do, and so is a header that is not its path's
// version.
func TestUnknownProtocol(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, v := range []int{hostproto.MinVersion - 1, hostproto.Version + 1} {
		for _, path := range []string{hostproto.SpecPathOf(v) + "?after=0&wait=0", hostproto.ReportPathOf(v)} {
			for _, method := range []string{"GET", "POST"} {
				resp := e.requestAt(v, method, path, e.credential, hostproto.Report{Protocol: v})
				if b := body(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(b, "upgrade the host daemon") {
					t.Errorf("%s %s: %d %q, want 400 saying to upgrade", method, path, resp.StatusCode, b)
				}
			}
		}
	}
	for _, c := range []struct{ header, path int }{{1, 2}, {2, 1}} {
		resp := e.requestAt(c.header, "GET", hostproto.SpecPathOf(c.path)+"?after=0&wait=0", e.credential, nil)
		if b := body(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(b, hostproto.Header) {
			t.Errorf("header %d on %s: %d %q, want 400 naming the header", c.header, hostproto.SpecPathOf(c.path), resp.StatusCode, b)
		}
	}
	if e.protocol() != 0 {
		t.Fatalf("protocol %d recorded from refused requests", e.protocol())
	}
}
