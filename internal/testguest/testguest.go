// Package testguest gives tests the project's tiny bootable guest
// (scripts/guest) and the SSH client to log in to it: the e2e tests boot it
// through the whole platform, the libvirt driver's tests through the driver
// alone.
package testguest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/internal/testenv"
)

// Cache keeps the built guest images between runs: one directory per
// version of scripts/guest, named by a hash of its files, so tests of two
// checkouts that differ there never rebuild or replace each other's image.
// The downloaded packages are shared (Cache/debs).
const Cache = "/var/tmp/bc-guest-cache"

// Image builds (or finds) the guest image and returns it as an image of the
// host protocol would name it: its file URL, format and sha256. It skips,
// loudly, without QEMU.
func Image(t testing.TB) (url, format, sum string) {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("SKIPPED LOUDLY: no QEMU on this machine, so no guest can run (neither KVM nor software emulation); make test installs qemu-system-x86")
	}
	scripts := filepath.Join(root(t), "scripts", "guest")
	version, err := hashTree(scripts)
	if err != nil {
		t.Fatalf("hash %s: %v", scripts, err)
	}
	out := filepath.Join(Cache, version)
	if err := os.MkdirAll(filepath.Join(Cache, "debs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../debs", filepath.Join(out, "debs")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	if b, err := exec.Command("bash", filepath.Join(scripts, "build.sh"), out).CombinedOutput(); err != nil {
		t.Fatalf("build the guest image: %v\n%s", err, b)
	}
	path := filepath.Join(out, "guest.qcow2")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the guest build made no image: %v", err)
	}
	h := sha256.Sum256(b)
	return "file://" + path, "qcow2", hex.EncodeToString(h[:])
}

// root is the repository's root: the nearest directory up with a go.mod.
func root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("testguest: no go.mod above the working directory")
		}
		dir = up
	}
}

// built are the files of scripts/guest the image is built from (those
// build.sh's stamp covers; not its README).
var built = []string{"build.sh", "syslinux.cfg", "rootfs"}

// hashTree is a short hash of the names and contents of the files under
// dir the image is built from.
func hashTree(dir string) (string, error) {
	h := sha256.New()
	for _, top := range built {
		err := filepath.WalkDir(filepath.Join(dir, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			rel, _ := filepath.Rel(dir, path)
			io.WriteString(h, rel+"\x00")
			_, err = io.Copy(h, f)
			return err
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// Key makes an SSH key pair for a test's guests: the signer to log in with
// and the authorized_keys line to give them.
func Key() (ssh.Signer, string) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	return signer, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
}

// Dial logs in as root to the guest at addr; the client is the caller's to
// close.
func Dial(addr string, signer ssh.Signer) (*ssh.Client, error) {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "22"), 2*time.Second)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), // the guest's host key is new every boot
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

// Exec runs cmd in a new session of client and returns its output.
func Exec(client *ssh.Client, cmd string) (string, error) {
	s, err := client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	b, err := s.Output(cmd)
	return string(b), err
}

// Run logs in to the guest at addr, runs cmd and returns its output; it
// gives up after 10 seconds.
func Run(addr string, signer ssh.Signer, cmd string) (string, error) {
	client, err := Dial(addr, signer)
	if err != nil {
		return "", err
	}
	defer client.Close()
	timeout := time.AfterFunc(10*time.Second, func() { client.Close() })
	defer timeout.Stop()
	return Exec(client, cmd)
}

// WaitSSH runs cmd as root over SSH on the guest at addr once it answers,
// within 3 minutes, and returns its output; else it fails with the end of
// the guest's console log.
func WaitSSH(t testing.TB, console, addr string, signer ssh.Signer, cmd string) string {
	t.Helper()
	var out string
	var err error
	if !testenv.Within(3*time.Minute, func() bool {
		out, err = Run(addr, signer, cmd)
		return err == nil
	}) {
		b, _ := os.ReadFile(console)
		t.Fatalf("no SSH to %s: %v\nconsole:\n%s", addr, err, Tail(b))
	}
	return out
}

// Tail is the end of a console log, for a failure.
func Tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
