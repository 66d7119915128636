package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/runtime/imagecache"
	"github.com/better-compute/vps/drivers/runtime/libvirt"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
)

// TestGuestSandboxHost boots two real guests through the libvirt runtime on
// a bridge (the host half of a sandbox, from the NodeSpec entry down; the
// control plane's half is not in it): a warm one, with env and a policy
// that allows only the bridge's gateway address, is booted, paused once its
// console says it booted, and resumed; a cold one has no policy. The warm
// guest answers SSH at once, sees its env in a login shell, reaches the
// gateway and not the bridge's second address, which the cold one reaches.
func TestGuestSandboxHost(t *testing.T) {
	url, format, sum := guestImage(t)
	const br, gw, other = "bcbr5", "10.52.0.1", "10.52.0.2"
	bridge(t, br, gw+"/24")
	addAddr(t, br, other+"/24")
	dir, err := os.MkdirTemp("/var/tmp", "bc-sandbox-guest-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	images, err := imagecache.New(imagecache.Config{Dir: filepath.Join(dir, "images"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := libvirt.New(ctx, libvirt.Config{DomainType: "qemu", StateDir: dir, Images: images, Bridge: br, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })

	signer, key := guestKey()
	spec := func(name string, last byte) hostproto.InstanceSpec {
		return hostproto.InstanceSpec{
			ID: ids.Encode(ids.Instance, ids.New()), Name: name, Power: hostproto.PowerRunning, Vcpus: 1, MemoryMB: 256, DiskGB: 1,
			Image: hostproto.Image{URL: url, SHA256: sum, Format: format}, SSHKeys: []string{key},
			Network: &hostproto.Network{MAC: fmt.Sprintf("02:bc:0a:34:00:%02x", last), Address: fmt.Sprintf("10.52.0.%d/24", last), Gateway: gw},
		}
	}
	warm, cold := spec("warm", 10), spec("cold", 11)
	warm.Power = hostproto.PowerPaused
	warm.Env = map[string]string{"GREETING": "hello", "QUOTED": `it's "x"`}
	warm.NetworkPolicy = &hostproto.NetworkPolicy{AllowOut: []string{gw}}
	for _, s := range []hostproto.InstanceSpec{warm, cold} {
		t.Cleanup(func() { rt.Undefine(ctx, s.ID) })
		if err := rt.Define(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if !testenv.Within(3*time.Minute, func() bool { b, err := rt.Booted(ctx, warm.ID); return err == nil && b }) {
		b, _ := os.ReadFile(filepath.Join(dir, "consoles", warm.ID+".log"))
		t.Fatalf("the warm guest did not boot; console:\n%s", tail(b))
	}
	if err := rt.Pause(ctx, warm.ID); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	if err := rt.Resume(ctx, warm.ID); err != nil {
		t.Fatal(err)
	}
	addr := func(s hostproto.InstanceSpec) string { return strings.TrimSuffix(s.Network.Address, "/24") }
	env := waitSSH(t, dir, warm.ID, addr(warm), signer, `sh -l -c 'printf "%s|%s" "$GREETING" "$QUOTED"'`)
	login := time.Since(resumed)
	if env != `hello|it's "x"` {
		t.Errorf("the warm guest's login shell sees %q, want its env", env)
	}
	for _, c := range []struct {
		from  hostproto.InstanceSpec
		to    string
		reach bool
	}{
		{warm, gw, true}, {warm, other, false}, {cold, other, true}, {cold, gw, true},
	} {
		if got := reaches(t, dir, c.from.ID, addr(c.from), signer, c.to); got != c.reach {
			t.Errorf("%s reaches %s: %v, want %v", c.from.Name, c.to, got, c.reach)
		}
	}
	t.Logf("warm guest: resume → SSH login with its env %v", login.Round(time.Millisecond))

	for _, s := range []hostproto.InstanceSpec{warm, cold} {
		if err := rt.Undefine(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []hostproto.InstanceSpec{warm, cold} {
		assertGone(t, dir, s.ID)
	}
	assertNoFilters(t, warm.ID)
}

// addAddr adds addr (a CIDR) to the interface dev, which a bridge made by
// bridge removes with it.
func addAddr(t testing.TB, dev, addr string) {
	t.Helper()
	if out, err := exec.Command("ip", "addr", "add", addr, "dev", dev).CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s: %v %s", addr, err, out)
	}
}

// assertNoFilters checks that libvirt has no network filter of the
// instances ids.
func assertNoFilters(t testing.TB, ids ...string) {
	t.Helper()
	out, err := exec.Command("virsh", "-c", "qemu:///system", "nwfilter-list").Output()
	if err != nil {
		t.Fatalf("virsh nwfilter-list: %v", err)
	}
	for _, id := range ids {
		if strings.Contains(string(out), "bc-"+id) {
			t.Errorf("the network filter of %s remains", id)
		}
	}
}

// TestRealSandbox runs sandboxes on real guests through the real server,
// reconciler and libvirt host daemon, all made through the API: a template
// with env and a policy allowing only the bridge's gateway keeps a warm
// instance booted and PAUSED; createSandbox claims it, its guest answers
// SSH, sees its env in a login shell, reaches the gateway and not the
// bridge's second address, which a COLD sandbox of a template with the
// default policy reaches. Deleting the sandboxes and templates leaves no
// domain, network filter, disk or allocation.
func TestRealSandbox(t *testing.T) {
	url, format, sum := guestImage(t)
	const br, gw, other = "bcbr0", "10.50.0.1", "10.50.0.2" // the seeded IP pool's network
	bridge(t, br, gw+"/22")
	addAddr(t, br, other+"/22")
	c := sandboxCluster(t, options{reconcilers: 1, poolRuntime: vps.RuntimeLibvirtKVM})
	dir := libvirtHostWith(t, c, 4, "--bridge", br)
	c.useImage(url, sum, format, 256)
	signer, key := guestKey()
	closed := c.sandboxTemplate("closed", map[string]any{"sshKeys": []string{key}, "warmCount": 1,
		"env":     []map[string]any{{"name": "GREETING", "value": "hello"}},
		"network": map[string]any{"allowInternetAccess": false, "allowOut": []string{gw}}})
	open := c.sandboxTemplate("open", map[string]any{"sshKeys": []string{key}})
	testenv.Eventually(t, 3*time.Minute, "the warm instance PAUSED", func() bool { return c.warm(closed, "PAUSED", true) == 1 })

	// login creates a sandbox of template and logs into its guest, and
	// returns it, what the login shell said and createSandbox → login.
	login := func(template, cmd string) (sandboxRef, string, time.Duration) {
		t.Helper()
		begin := time.Now()
		ref := c.createSandbox(template, nil)
		out := waitSSH(t, dir, ref.instance, c.leaseOf(ref.instance), signer, cmd)
		took := time.Since(begin)
		testenv.Eventually(t, time.Minute, "sandbox "+ref.id+" RUNNING", func() bool { return c.sandboxState(ref.id) == "RUNNING" })
		return ref, out, took
	}
	warm, greeting, warmLogin := login(closed, ". /etc/profile; echo $GREETING")
	if warm.startedFrom != "WARM" {
		t.Fatalf("the first sandbox started from %s, want WARM; the template's instances (state desired version claimed): %s",
			warm.startedFrom, c.warmRows(closed))
	}
	if greeting != "hello\n" {
		t.Errorf("the warm sandbox's login shell says GREETING=%q, want hello", greeting)
	}
	// The claim woke a refill; dropping the warm count trims it, so the
	// cold sandbox boots alone, as the warm one's guest had.
	c.updateTemplate(closed, map[string]any{"warmCount": 0})
	c.settle(2 * time.Minute)
	cold, _, coldLogin := login(open, "true")
	if cold.startedFrom != "COLD" {
		t.Fatalf("the second sandbox started from %s, want COLD", cold.startedFrom)
	}
	t.Logf("createSandbox → SSH login: warm %v, cold %v", warmLogin.Round(time.Millisecond), coldLogin.Round(time.Millisecond))

	for _, cs := range []struct {
		from  sandboxRef
		to    string
		reach bool
	}{
		{warm, gw, true}, {warm, other, false}, {cold, other, true}, {cold, gw, true},
	} {
		if got := reaches(t, dir, cs.from.instance, c.leaseOf(cs.from.instance), signer, cs.to); got != cs.reach {
			t.Errorf("the %s sandbox reaches %s: %v, want %v", strings.ToLower(cs.from.startedFrom), cs.to, got, cs.reach)
		}
	}

	for _, ref := range []sandboxRef{warm, cold} {
		if codes := c.sandboxOp("deleteSandbox", ref.id, nil); len(codes) > 0 {
			t.Fatalf("deleteSandbox: %v", codes)
		}
	}
	for _, tmpl := range []string{closed, open} {
		c.must(c.member, `mutation($id: ID!) { deleteSandboxTemplate(input: {id: $id}) { sandboxTemplate { id } } }`, map[string]any{"id": tmpl})
	}
	c.settle(2 * time.Minute)
	var all []string
	rows, err := c.db.Query(context.Background(), "SELECT id FROM instances")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		rows.Scan(&id)
		all = append(all, ids.Encode(ids.Instance, id))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// An instance is DELETED once its host reports it gone, which may be
	// before the host has removed its disk.
	testenv.Eventually(t, 30*time.Second, "the host's overlays removed", func() bool {
		o, _ := os.ReadDir(filepath.Join(dir, "overlays"))
		return len(o) == 0
	})
	for _, id := range all {
		assertGone(t, dir, id)
	}
	assertNoFilters(t, all...)
	c.noLeaks()
}

// warmRows describes the instances of a template's warm pool, for a failure.
func (c *cluster) warmRows(template string) string {
	c.t.Helper()
	rows, err := c.db.Query(context.Background(), `SELECT concat_ws(' ', i.state, i.desired_state, i.warm_template_version, t.instance_version, i.claimed_at)
		FROM instances i JOIN sandbox_templates t ON t.id = i.warm_template_id WHERE t.id = $1`, decode(c.t, ids.SandboxTemplate, template))
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for rows.Next() {
		var s string
		rows.Scan(&s)
		b.WriteString("\n  " + s)
	}
	return b.String()
}
