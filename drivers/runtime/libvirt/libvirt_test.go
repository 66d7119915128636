package libvirt_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/imagecache"
	"github.com/better-compute/vps/drivers/runtime/libvirt"
	"github.com/better-compute/vps/drivers/runtime/nocloud"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

const socket = "/var/run/libvirt/libvirt-sock"

type env struct {
	t     testing.TB
	dir   string
	cache *imagecache.Cache
	image hostproto.Image
}

// setup needs a running libvirtd with the QEMU driver (make test starts
// one); it fails, loudly, without.
func setup(t testing.TB) *env {
	t.Helper()
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("LIBVIRTD IS NOT RUNNING (no %s): make test installs and starts it: %v", socket, err)
	}
	// libvirt's QEMU user must reach the state directory.
	dir, err := os.MkdirTemp("/var/tmp", "bc-libvirt-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	src := filepath.Join(dir, "source.qcow2")
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", src, "64M").CombinedOutput(); err != nil {
		t.Fatalf("QEMU-IMG FAILED (install Debian's qemu-utils): %v %s", err, out)
	}
	b, _ := os.ReadFile(src)
	sum := sha256.Sum256(b)
	cache, err := imagecache.New(imagecache.Config{Dir: filepath.Join(dir, "images"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, dir: dir, cache: cache, image: hostproto.Image{URL: "file://" + src, SHA256: hex.EncodeToString(sum[:]), Format: "qcow2"}}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// runtime returns a runtime of the test's state directory, configured
// further by configure, closed when the test ends.
func (e *env) runtime(configure ...func(*libvirt.Config)) *libvirt.Runtime {
	e.t.Helper()
	cfg := libvirt.Config{DomainType: "qemu", StateDir: e.dir, Images: e.cache, Logger: quiet}
	for _, f := range configure {
		f(&cfg)
	}
	r, err := libvirt.New(context.Background(), cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { r.Close() })
	return r
}

func (e *env) spec() hostproto.InstanceSpec {
	return hostproto.InstanceSpec{
		ID: ids.Encode(ids.Instance, ids.New()), Name: "web-1", Power: hostproto.PowerRunning, Vcpus: 1, MemoryMB: 64, DiskGB: 1,
		Image: e.image, SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl t@x"},
		UserData: "#cloud-config\nhostname: web-1\n",
		Network:  &hostproto.Network{MAC: "02:bc:0a:4d:00:0a", Address: "10.77.0.10/24", Gateway: "10.77.0.1"},
	}
}

func state(t *testing.T, r *libvirt.Runtime, id string) (hostd.Domain, bool) {
	t.Helper()
	ds, err := r.Domains(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d, true
		}
	}
	return hostd.Domain{}, false
}

func want(t *testing.T, r *libvirt.Runtime, id string, s hostd.DomainState) {
	t.Helper()
	if d, ok := state(t, r, id); !ok || d.State != s {
		t.Fatalf("domain %s = %+v (exists %v), want %s", id, d, ok, s)
	}
}

func TestLifecycle(t *testing.T) {
	e := setup(t)
	r := e.runtime()
	ctx := context.Background()
	spec := e.spec()
	t.Cleanup(func() { r.Undefine(ctx, spec.ID) })

	if err := r.Define(ctx, spec); err != nil {
		t.Fatal(err)
	}
	want(t, r, spec.ID, hostd.DomainStopped)
	if err := r.Define(ctx, spec); err != nil {
		t.Fatalf("defining again: %v", err)
	}
	overlay := filepath.Join(e.dir, "overlays", spec.ID+".qcow2")
	info, err := exec.Command("qemu-img", "info", "-U", overlay).CombinedOutput()
	if err != nil || !strings.Contains(string(info), "backing file: "+filepath.Join(e.dir, "images")) {
		t.Fatalf("overlay is not over the cached image: %s %v", info, err)
	}

	steps := []struct {
		name string
		do   func() error
		want hostd.DomainState
	}{
		{"start", func() error { return r.Start(ctx, spec.ID) }, hostd.DomainRunning},
		{"start again", func() error { return r.Start(ctx, spec.ID) }, hostd.DomainRunning},
		{"pause", func() error { return r.Pause(ctx, spec.ID) }, hostd.DomainPaused},
		{"resume", func() error { return r.Resume(ctx, spec.ID) }, hostd.DomainRunning},
		// No OS answers ACPI here: the timeout passes and the domain is destroyed.
		{"shut down", func() error { return r.Shutdown(ctx, spec.ID, time.Second) }, hostd.DomainStopped},
		{"shut down again", func() error { return r.Shutdown(ctx, spec.ID, time.Second) }, hostd.DomainStopped},
		{"start after a stop", func() error { return r.Start(ctx, spec.ID) }, hostd.DomainRunning},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want(t, r, spec.ID, s.want)
	}

	t.Run("a domain destroyed by hand is seen at once", func(t *testing.T) {
		drain(r.Changes())
		if out, err := exec.Command("virsh", "-c", "qemu:///system", "destroy", "bc-"+spec.ID).CombinedOutput(); err != nil {
			t.Fatalf("virsh destroy: %v %s", err, out)
		}
		select {
		case <-r.Changes():
		case <-time.After(10 * time.Second):
			t.Fatal("no lifecycle event")
		}
		d, _ := state(t, r, spec.ID)
		if d.State != hostd.DomainStopped || d.Reason != "destroyed" {
			t.Fatalf("after virsh destroy: %+v", d)
		}
	})
	t.Run("a restarted driver adopts its domains", func(t *testing.T) {
		again := e.runtime()
		want(t, again, spec.ID, hostd.DomainStopped)
	})
	t.Run("undefine leaves nothing behind", func(t *testing.T) {
		if err := r.Undefine(ctx, spec.ID); err != nil {
			t.Fatal(err)
		}
		if _, ok := state(t, r, spec.ID); ok {
			t.Fatal("still listed")
		}
		for _, dir := range []string{"overlays", "seeds", "consoles"} {
			if left, _ := os.ReadDir(filepath.Join(e.dir, dir)); len(left) != 0 {
				t.Fatalf("%s left: %v", dir, left)
			}
		}
		if out, _ := exec.Command("virsh", "-c", "qemu:///system", "list", "--all", "--name").Output(); strings.Contains(string(out), spec.ID) {
			t.Fatal("libvirt still has the domain")
		}
		if err := r.Undefine(ctx, spec.ID); err != nil {
			t.Fatalf("undefining twice: %v", err)
		}
	})
}

// TestSeedHoldsOnlyTenantData reads the seed ISO of a defined domain: its
// files are exactly the instance's NoCloud seed, with nothing of the host.
func TestSeedHoldsOnlyTenantData(t *testing.T) {
	e := setup(t)
	r := e.runtime()
	ctx := context.Background()
	spec := e.spec()
	t.Cleanup(func() { r.Undefine(ctx, spec.ID) })
	if err := r.Define(ctx, spec); err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(e.dir, "seeds", spec.ID+".iso")
	out, err := exec.Command("isoinfo", "-R", "-f", "-i", iso).Output()
	if err != nil {
		t.Fatalf("ISOINFO FAILED (Debian's genisoimage has it): %v", err)
	}
	files := strings.Fields(string(out))
	slices.Sort(files)
	if want := []string{"/meta-data", "/network-config", "/user-data"}; !slices.Equal(files, want) {
		t.Fatalf("seed files %v, want %v", files, want)
	}
	seed, _ := nocloud.New(spec)
	for name, content := range seed.Files() {
		got, err := exec.Command("isoinfo", "-R", "-i", iso, "-x", "/"+name).Output()
		if err != nil || string(got) != content {
			t.Errorf("%s = %q, want %q", name, got, content)
		}
	}
	b, _ := os.ReadFile(iso)
	for _, secret := range []string{"bch_", "bct_", "BC_HOST_CREDENTIAL", "Authorization"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the seed holds %q", secret)
		}
	}
}

func TestAnotherHostsDomainIsLeftAlone(t *testing.T) {
	e := setup(t)
	mine := e.runtime()
	other := setup(t).runtime() // another daemon on the same libvirtd
	ctx := context.Background()
	spec := e.spec()
	t.Cleanup(func() { mine.Undefine(ctx, spec.ID) })
	if err := mine.Define(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, ok := state(t, other, spec.ID); ok {
		t.Fatal("another daemon lists the domain as its own")
	}
	if err := other.Start(ctx, spec.ID); err == nil {
		t.Fatal("another daemon started the domain")
	}
	want(t, mine, spec.ID, hostd.DomainStopped)
}

func TestNotOurs(t *testing.T) {
	e := setup(t)
	r := e.runtime()
	name := "bc-" + ids.Encode(ids.Instance, ids.New())
	xml := "<domain type='qemu'><name>" + name + "</name><memory unit='MiB'>32</memory><os><type arch='x86_64'>hvm</type></os></domain>"
	path := filepath.Join(e.dir, "stranger.xml")
	os.WriteFile(path, []byte(xml), 0o644)
	if out, err := exec.Command("virsh", "-c", "qemu:///system", "define", path).CombinedOutput(); err != nil {
		t.Fatalf("virsh define: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("virsh", "-c", "qemu:///system", "undefine", name).Run() })
	ds, err := r.Domains(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if "bc-"+d.ID == name {
			t.Fatal("a domain without our metadata was taken for ours")
		}
	}
}

func drain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func TestInventory(t *testing.T) {
	e := setup(t)
	inv, err := e.runtime().Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.Vcpus <= 0 || inv.MemoryMB <= 0 || inv.DiskGB <= 0 {
		t.Fatalf("inventory %+v", inv)
	}
}
