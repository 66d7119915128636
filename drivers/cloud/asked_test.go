package cloud

import "testing"

func TestAsked(t *testing.T) {
	var a Asked
	if _, ok := a.Since("1", StatusStopping); ok {
		t.Fatal("nothing asked yet")
	}
	a.Ask("1", StatusStopping)
	if ago, ok := a.Since("1", StatusStopping); !ok || ago < 0 {
		t.Fatalf("Since after Ask = %v, %v", ago, ok)
	}
	if _, ok := a.Since("1", StatusStarting); ok {
		t.Fatal("a stop asked is not a start")
	}
	a.Ask("1", StatusStarting) // the last change asked is the one under way
	if _, ok := a.Since("1", StatusStopping); ok {
		t.Fatal("the stop was replaced by a start")
	}
	a.Forget("1")
	if _, ok := a.Since("1", StatusStarting); ok {
		t.Fatal("forgotten")
	}
}
