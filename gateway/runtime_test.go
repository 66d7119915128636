package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/internal/vps"
)

// requestAs makes a spec request whose daemon says it runs runtime.
func (e *env) requestAs(runtime string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+hostproto.SpecPath+"?after=0&wait=0", nil)
	req.Header.Set(hostproto.Header, strconv.Itoa(hostproto.Version))
	req.Header.Set("Authorization", "Bearer "+e.credential)
	if runtime != "" {
		req.Header.Set(hostproto.RuntimeHeader, runtime)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (e *env) hostRuntime() *string {
	e.t.Helper()
	var rt *string
	if err := e.db.QueryRow(context.Background(), "SELECT runtime FROM hosts WHERE id = $1", e.host).Scan(&rt); err != nil {
		e.t.Fatal(err)
	}
	return rt
}

// A host whose daemon runs another runtime than its pool's is refused with
// 400 naming both, logged once however often it retries; its runtime is
// recorded on the host. Its pool's runtime is served, and a daemon that
// does not say (older than protocol 3) is served unchecked.
func TestRefusesAHostOfAnotherRuntime(t *testing.T) {
	t.Parallel()
	var warnings atomic.Int32
	e := setup(t, func(c *gateway.Config) {
		c.Logger = slog.New(countingHandler{Handler: slog.NewTextHandler(io.Discard, nil), warnings: &warnings})
	})

	for range 3 {
		code, body := e.requestAs(vps.RuntimeFake)
		if code != http.StatusBadRequest || !strings.Contains(body, "runs runtime fake but its pool runs libvirt-kvm") {
			t.Fatalf("a fake host in a libvirt-kvm pool: %d %q, want 400 naming both runtimes", code, body)
		}
	}
	if n := warnings.Load(); n != 1 {
		t.Errorf("the refusal was logged %d times, want once", n)
	}
	if rt := e.hostRuntime(); rt == nil || *rt != vps.RuntimeFake {
		t.Errorf("the host's recorded runtime is %v, want fake", rt)
	}

	if code, body := e.requestAs(vps.RuntimeLibvirtKVM); code != http.StatusOK {
		t.Fatalf("a libvirt-kvm host in a libvirt-kvm pool: %d %q, want its spec", code, body)
	}
	if rt := e.hostRuntime(); rt == nil || *rt != vps.RuntimeLibvirtKVM {
		t.Errorf("the host's recorded runtime is %v, want libvirt-kvm", rt)
	}
	if code, body := e.requestAs(""); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("a daemon that does not name its runtime: %d %q, want served", code, body)
	}
}
