package reconciler

import (
	"slices"
	"testing"
	"time"
)

func TestQueue(t *testing.T) {
	t.Parallel()
	t.Run("adds before a take coalesce, keeping every entry", func(t *testing.T) {
		q := newQueue[string]()
		q.add("a", "1-0")
		q.add("a", "2-0")
		q.add("b", "3-0")
		key, ids, _ := q.get()
		if key != "a" || !slices.Equal(ids, []string{"1-0", "2-0"}) {
			t.Fatalf("get = %s %v", key, ids)
		}
		if key, _, _ := q.get(); key != "b" {
			t.Fatalf("second get = %s, want b (a is taken once)", key)
		}
	})
	t.Run("a key added while worked on is handed out again after, not before", func(t *testing.T) {
		q := newQueue[string]()
		q.add("a", "1-0")
		key, _, _ := q.get()
		q.add("a", "2-0")
		got := make(chan string, 1)
		go func() { k, _, _ := q.get(); got <- k }()
		select {
		case k := <-got:
			t.Fatalf("%s handed out while still being worked on", k)
		case <-time.After(50 * time.Millisecond):
		}
		q.done(key, nil, false)
		select {
		case k := <-got:
			if k != "a" {
				t.Fatalf("got %s", k)
			}
		case <-time.After(time.Second):
			t.Fatal("the dirty key was not handed out again")
		}
	})
	t.Run("a failure keeps the entries and backs off", func(t *testing.T) {
		q := newQueue[string]()
		q.add("a", "1-0")
		key, ids, _ := q.get()
		start := time.Now()
		q.done(key, ids, true)
		key, ids, _ = q.get()
		if key != "a" || !slices.Equal(ids, []string{"1-0"}) {
			t.Fatalf("retry = %s %v", key, ids)
		}
		q.done(key, ids, true)
		q.get()
		if waited := time.Since(start); waited < backoff(0)+backoff(1) {
			t.Fatalf("retried after %v, before the backoff", waited)
		}
	})
	t.Run("close releases waiting workers", func(t *testing.T) {
		q := newQueue[string]()
		done := make(chan bool)
		go func() { _, _, ok := q.get(); done <- ok }()
		q.close()
		if <-done {
			t.Fatal("get succeeded on a closed queue")
		}
	})
	t.Run("backoff doubles to a cap", func(t *testing.T) {
		if backoff(0) != 5*time.Millisecond || backoff(1) != 10*time.Millisecond || backoff(30) != 30*time.Second {
			t.Fatalf("backoff = %v %v %v", backoff(0), backoff(1), backoff(30))
		}
	})
}
