package reconciler

import (
	"sync"
	"time"
)

// gather collects items from many goroutines for one that hands them on
// in batches (drain): a statement or command of many items costs about
// what one of an item does, a round trip.
type gather[T any] struct {
	mu    sync.Mutex
	items []T
	wake  chan struct{}
}

func newGather[T any]() *gather[T] { return &gather[T]{wake: make(chan struct{}, 1)} }

// add collects items.
func (g *gather[T]) add(items ...T) {
	if len(items) == 0 {
		return
	}
	g.mu.Lock()
	g.items = append(g.items, items...)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *gather[T]) take() []T {
	g.mu.Lock()
	defer g.mu.Unlock()
	items := g.items
	g.items = nil
	return items
}

// drain hands flush what was collected, once more has come for wait after
// an item woke it, all of it at once, until stop closes, and then what is
// left.
func (g *gather[T]) drain(stop <-chan struct{}, wait time.Duration, flush func([]T)) {
	for {
		stopped := false
		select {
		case <-stop:
			stopped = true
		case <-g.wake:
			select {
			case <-stop:
				stopped = true
			case <-time.After(wait):
			}
		}
		if items := g.take(); len(items) > 0 {
			flush(items)
		}
		if stopped {
			return
		}
	}
}
