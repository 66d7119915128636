// Package packaging_test checks what a deployment installs: the systemd
// units, the container image and the release archives.
package packaging_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// need returns the path of a command the test needs, failing loudly when
// it is missing: make test installs it (scripts/services.sh).
func need(t *testing.T, cmd string) string {
	t.Helper()
	p, err := exec.LookPath(cmd)
	if err != nil {
		t.Fatalf("%s NOT FOUND: make test installs it (scripts/services.sh, as root)", cmd)
	}
	return p
}

// run runs a command in the repository's root and returns its combined
// output, failing the test when it fails.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func random(t *testing.T) string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// TestSystemdUnits: systemd-analyze verify accepts the units as shipped,
// their ExecStart pointing at a built binary, and says nothing about them.
func TestSystemdUnits(t *testing.T) {
	t.Parallel()
	analyze := need(t, "systemd-analyze")
	dir := t.TempDir()
	bin := filepath.Join(dir, "better-compute")
	run(t, nil, "go", "build", "-o", bin, "./cmd/better-compute")
	units, err := filepath.Glob("systemd/*.service")
	if err != nil || len(units) != 3 {
		t.Fatalf("units: %v %v", units, err)
	}
	var paths []string
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("/usr/local/bin/better-compute")) {
			t.Fatalf("%s does not run /usr/local/bin/better-compute", u)
		}
		p := filepath.Join(dir, filepath.Base(u))
		if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte("/usr/local/bin/better-compute"), []byte(bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestContainerImage builds the image with make image's script and runs
// serve from it against the test's Postgres and Redis: /healthz and
// /readyz answer 200, and the binary reports the version stamped in.
func TestContainerImage(t *testing.T) {
	t.Parallel()
	podman := need(t, "podman")
	testenv.HostNetwork(t)
	image := "localhost/better-compute-test:" + random(t)
	run(t, []string{"IMAGE=" + image, "VERSION=v0.0.0-test"}, "bash", "scripts/image.sh")
	t.Cleanup(func() { exec.Command(podman, "rmi", "-f", image).Run() })

	// Limits any machine grants: podman's defaults (a million open files)
	// need CAP_SYS_RESOURCE, which some machines withhold.
	base := []string{"run", "--rm", "--network", "host", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"}
	if _, err := exec.LookPath("runc"); err == nil {
		base = append([]string{"--runtime", "runc"}, base...)
	}
	podmanRun := func(args ...string) *exec.Cmd { return exec.Command(podman, append(slices.Clone(base), args...)...) }

	out, err := podmanRun(image, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "version: v0.0.0-test") {
		t.Fatalf("version from the image: %v\n%s", err, out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, prefix := testenv.Redis(t)
	name := "bc-test-" + random(t)
	serve := podmanRun("--name", name,
		"-e", "DATABASE_URL="+testenv.DatabaseURL(t), "-e", "REDIS_URL="+testenv.RedisURL(),
		"-e", "BC_REDIS_PREFIX="+prefix, "-e", "BC_SECRET=container-test-secret-0123456789",
		image, "serve", "--listen", addr)
	var logs bytes.Buffer
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { serve.Wait(); close(done) }()
	t.Cleanup(func() {
		exec.Command(podman, "rm", "-f", name).Run()
		<-done
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		ok := testenv.Within(60*time.Second, func() bool {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		if !ok {
			t.Fatalf("%s from the container did not answer 200 within 60 s; its output:\n%s", path, logs.String())
		}
	}
}

// TestRelease builds a release for one platform: the archive holds both
// binaries (the version stamped in), the units and the README, and
// SHA256SUMS checks it.
func TestRelease(t *testing.T) {
	t.Parallel()
	dist := t.TempDir()
	run(t, []string{"VERSION=v0.0.0-test", "PLATFORMS=linux/amd64", "DIST=" + dist}, "bash", "scripts/release.sh")
	sums := exec.Command("sha256sum", "-c", "SHA256SUMS")
	sums.Dir = dist
	if out, err := sums.CombinedOutput(); err != nil || !strings.Contains(string(out), "better-compute_v0.0.0-test_linux_amd64.tar.gz: OK") {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	run(t, nil, "tar", "-C", dist, "-xzf", filepath.Join(dist, "better-compute_v0.0.0-test_linux_amd64.tar.gz"))
	root := filepath.Join(dist, "better-compute_v0.0.0-test_linux_amd64")
	for _, f := range []string{"better-compute", "bcctl", "README.md", "systemd/better-compute-serve.service", "systemd/better-compute-reconcile.service", "systemd/better-compute-host.service"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the archive lacks %s", f)
		}
	}
	for cmd, want := range map[string]string{"better-compute": "version: v0.0.0-test", "bcctl": "bcctl version v0.0.0-test"} {
		out, err := exec.Command(filepath.Join(root, cmd), "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s --version: %v\n%s", cmd, err, out)
		}
	}
}
