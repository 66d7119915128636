package reconciler

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestRefusalBackoff: each refusal in a row doubles the wait, up to five
// minutes; another version of the account (updated) starts over, and a
// success forgets it.
func TestRefusalBackoff(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		want time.Duration
	}{
		{1, 10 * time.Second}, {2, 20 * time.Second}, {5, 160 * time.Second},
		{6, 5 * time.Minute}, {7, 5 * time.Minute}, {1000, 5 * time.Minute},
	} {
		if got := refusalBackoff(10*time.Second, c.n); got != c.want {
			t.Errorf("refusal %d: wait %v, want %v", c.n, got, c.want)
		}
	}

	var rs refusals
	id, now := uuid.New(), time.Now()
	v1, v2 := [32]byte{1}, [32]byte{2}
	if rs.holding(id, v1, now) {
		t.Fatal("an account never refused is held")
	}
	if wait, first := rs.refuse(id, v1, now, time.Second); wait != time.Second || !first {
		t.Fatalf("first refusal: %v, %v", wait, first)
	}
	if wait, first := rs.refuse(id, v1, now, time.Second); wait != 2*time.Second || first {
		t.Fatalf("second refusal: %v, %v", wait, first)
	}
	switch {
	case !rs.holding(id, v1, now.Add(time.Second)):
		t.Fatal("not held within its wait")
	case rs.holding(id, v1, now.Add(2*time.Second)):
		t.Fatal("held past its wait")
	case rs.holding(id, v2, now):
		t.Fatal("an updated account is held by its old version's refusals")
	}
	if wait, first := rs.refuse(id, v2, now, time.Second); wait != time.Second || !first {
		t.Fatalf("the updated account's first refusal: %v, %v", wait, first)
	}
	if !rs.clear(id) || rs.clear(id) || rs.holding(id, v2, now) {
		t.Fatal("a success does not forget the refusals")
	}
}
