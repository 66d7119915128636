package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// HostNetwork holds, until t ends, the machine-wide lock of tests that add
// network interfaces (bridges, and the taps of guests on them) and of tests
// that drive a browser: Chromium fails the requests in flight with
// ERR_NETWORK_CHANGED whenever an interface comes or goes, and go test runs
// packages side by side. The lock is a file lock, so it holds across
// processes and is released when one dies. A test takes it once, before it
// adds an interface or starts the browser.
func HostNetwork(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "better-compute-host-network.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("host network lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("host network lock: %v", err)
	}
	t.Cleanup(func() { f.Close() })
}
