package hostd

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	var b backoff
	want := []time.Duration{
		100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
		5 * time.Second, 5 * time.Second,
	}
	for i, w := range want {
		if got := b.next(); got != w {
			t.Errorf("wait %d: %v, want %v", i+1, got, w)
		}
	}
	b.reset()
	if got := b.next(); got != 100*time.Millisecond {
		t.Errorf("after reset: %v, want 100ms", got)
	}
}
