package reconciler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/seal"
)

// hostClient is a host daemon of the current protocol, speaking raw HTTP
// to a gateway.
type hostClient struct {
	t          *testing.T
	url, token string
}

func (h hostClient) do(method, path string, body any) *http.Response {
	h.t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, h.url+path, bytes.NewReader(b))
	req.Header.Set(hostproto.Header, strconv.Itoa(hostproto.Version))
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// spec long-polls the host's spec for up to wait seconds.
func (h hostClient) spec(after int64, wait int) (hostproto.NodeSpec, bool) {
	h.t.Helper()
	resp := h.do("GET", hostproto.SpecPath+"?after="+strconv.FormatInt(after, 10)+"&wait="+strconv.Itoa(wait), nil)
	var spec hostproto.NodeSpec
	if resp.StatusCode != 200 {
		return spec, false
	}
	return spec, json.NewDecoder(resp.Body).Decode(&spec) == nil
}

func (h hostClient) report(gen int64, statuses ...hostproto.CommandStatus) {
	h.t.Helper()
	if resp := h.do("POST", hostproto.ReportPath, hostproto.Report{Protocol: hostproto.Version, Generation: gen, Commands: statuses}); resp.StatusCode != 204 {
		h.t.Fatalf("report: %d", resp.StatusCode)
	}
}

// TestCommandDeadline: a command its host does not finish by its deadline
// is failed by the vps.sandboxes loop and handed to its kind's owner; the
// host's waiting long-poll returns the command with abandon set; what the
// host then reports of it but abandoned changes nothing, and abandoned
// acknowledges it, out of the spec. A host gone for good has its command
// failed the same way.
func TestCommandDeadline(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sealer, _ := seal.New("test")
	gw := gateway.New(gateway.Config{DB: e.db, Redis: e.rdb, Prefix: e.prefix, Sealer: sealer, Logger: e.log})
	gwCtx, stopGateway := context.WithCancel(context.Background())
	gwDone := make(chan struct{})
	go func() { gw.Run(gwCtx); close(gwDone) }()
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { stopGateway(); <-gwDone; srv.Close() })

	ended := make(chan string, 16)
	e.start(func(c *reconciler.Config) { c.SandboxInterval = 100 * time.Millisecond }, func(r *reconciler.Reconciler) {
		r.Register(vps.TopicCommands, reconciler.KindFunc(func(ctx context.Context, req reconciler.Request) (reconciler.Result, error) {
			ended <- req.Key
			return reconciler.Result{}, nil
		}))
	})
	adopt := func(name string) (uuid.UUID, hostClient) {
		h, err := e.svc.CreateHost(e.ctx, e.pool, name)
		e.check(err)
		_, err = e.db.Exec(context.Background(), "UPDATE hosts SET protocol = $2, last_seen_at = now() WHERE id = $1", h.Host.ID, hostproto.Version)
		e.check(err)
		return h.Host.ID, hostClient{t: t, url: srv.URL, token: h.Credential}
	}
	live, host := adopt("hv-1")
	gone, _ := adopt("hv-2")
	const timeout = 2 * time.Second
	cmd, err := reconciler.QueueCommand(e.ctx, e.db, live, hostproto.KindInstanceSnapshot, hostproto.LaneBulk, hostproto.SnapshotPayload{InstanceID: "ins_x", SnapshotID: "snp_x"}, timeout)
	e.check(err)
	goneCmd, err := reconciler.QueueCommand(e.ctx, e.db, gone, hostproto.KindSnapshotPurge, hostproto.LaneInteractive, hostproto.PurgePayload{SnapshotID: "snp_x"}, timeout)
	e.check(err)
	cmdID := ids.Encode(ids.HostCommand, cmd)

	spec, ok := host.spec(0, 0)
	if !ok || len(spec.Commands) != 1 || spec.Commands[0].ID != cmdID || spec.Commands[0].Abandon {
		t.Fatalf("spec %+v, want the command", spec)
	}
	host.report(spec.Generation, hostproto.CommandStatus{ID: cmdID, State: hostproto.CommandRunning, Progress: 50})

	t.Run("past its deadline it fails and the host is told to abandon it", func(t *testing.T) {
		next, ok := host.spec(spec.Generation, 25)
		if !ok || len(next.Commands) != 1 || !next.Commands[0].Abandon {
			t.Fatalf("spec %+v, want the command with abandon", next)
		}
		spec = next
		if n := e.count("host_commands WHERE id = $1 AND state = 'FAILED' AND error = 'deadline passed' AND abandoned_at IS NOT NULL AND acknowledged_at IS NULL", cmd); n != 1 {
			t.Fatal("the command is not failed and abandoned")
		}
	})
	t.Run("both commands reach their owner", func(t *testing.T) {
		want := map[string]bool{cmd.String(): true, goneCmd.String(): true}
		deadline := time.After(10 * time.Second)
		for len(want) > 0 {
			select {
			case key := <-ended:
				delete(want, key)
			case <-deadline:
				t.Fatalf("not handed over: %v", want)
			}
		}
		if n := e.count("host_commands WHERE id = $1 AND state = 'FAILED' AND abandoned_at IS NOT NULL", goneCmd); n != 1 {
			t.Fatal("the gone host's command is not failed")
		}
	})
	t.Run("a late success changes nothing", func(t *testing.T) {
		host.report(spec.Generation, hostproto.CommandStatus{ID: cmdID, State: hostproto.CommandSucceeded, Result: json.RawMessage(`{"sizeBytes":1,"sha256":"x"}`)})
		if n := e.count("host_commands WHERE id = $1 AND state = 'FAILED' AND result IS NULL AND acknowledged_at IS NULL", cmd); n != 1 {
			t.Fatal("a success after the deadline was recorded")
		}
	})
	t.Run("abandoned acknowledges it", func(t *testing.T) {
		host.report(spec.Generation, hostproto.CommandStatus{ID: cmdID, State: hostproto.CommandAbandoned})
		next, ok := host.spec(spec.Generation, 25)
		if !ok || len(next.Commands) != 0 {
			t.Fatalf("spec %+v, want no commands", next)
		}
		if n := e.count("host_commands WHERE id = $1 AND acknowledged_at IS NOT NULL", cmd); n != 1 {
			t.Fatal("not acknowledged")
		}
	})
}
