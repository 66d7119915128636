package testenv

import (
	"testing"
	"time"
)

// Eventually waits until cond holds, checking it every few milliseconds,
// and fails the test naming what it waited for if timeout passes first.
// Tests wait on a condition this way, never on a fixed sleep.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Within waits until cond holds, checking it every few milliseconds, and
// reports whether it did before timeout passed: for a test that says
// itself what differs when it did not.
func Within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}
