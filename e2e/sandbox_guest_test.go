package e2e

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/drivers/runtime/imagecache"
	"github.com/better-compute/vps/drivers/runtime/libvirt"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
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
	if out, err := exec.Command("ip", "addr", "add", other+"/24", "dev", br).CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v %s", err, out)
	}
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

	pub, priv, _ := ed25519.GenerateKey(nil)
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
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
	console := func(id string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "consoles", id+".log"))
		return tail(b)
	}
	if !testenv.Within(3*time.Minute, func() bool { b, err := rt.Booted(ctx, warm.ID); return err == nil && b }) {
		t.Fatalf("the warm guest did not boot; console:\n%s", console(warm.ID))
	}
	if err := rt.Pause(ctx, warm.ID); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	if err := rt.Resume(ctx, warm.ID); err != nil {
		t.Fatal(err)
	}
	run := func(s hostproto.InstanceSpec, cmd string) string {
		t.Helper()
		addr := strings.TrimSuffix(s.Network.Address, "/24")
		var out string
		if !testenv.Within(3*time.Minute, func() bool {
			var err error
			out, err = sshRun(addr, signer, cmd)
			return err == nil
		}) {
			t.Fatalf("no SSH to %s; console:\n%s", s.Name, console(s.ID))
		}
		return out
	}
	env := run(warm, `sh -l -c 'printf "%s|%s" "$GREETING" "$QUOTED"'`)
	login := time.Since(resumed)
	if env != `hello|it's "x"` {
		t.Errorf("the warm guest's login shell sees %q, want its env", env)
	}
	ping := func(s hostproto.InstanceSpec, to string) bool {
		t.Helper()
		return strings.TrimSpace(run(s, "ping -c 1 -W 2 "+to+" >/dev/null 2>&1; echo $?")) == "0"
	}
	for _, c := range []struct {
		from  hostproto.InstanceSpec
		to    string
		reach bool
	}{
		{warm, gw, true}, {warm, other, false}, {cold, other, true}, {cold, gw, true},
	} {
		if got := ping(c.from, c.to); got != c.reach {
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
	if out, _ := exec.Command("virsh", "-c", "qemu:///system", "nwfilter-list").Output(); strings.Contains(string(out), warm.ID) {
		t.Fatal("the warm guest's network filter remains")
	}
}
