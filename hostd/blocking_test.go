package hostd_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostproto"
)

// blocking is a Runtime over a fake.Hypervisor whose calls of the
// operations it holds wait until they are released (or their context
// ends). It counts every call by operation and ID, and the most calls in
// flight at once for one ID.
type blocking struct {
	*fake.Hypervisor

	mu   sync.Mutex
	held map[string]chan struct{} // by operation; closed when released
	// entered receives "op id" when a held call starts waiting.
	entered  chan string
	calls    map[string]int // by "op id"
	inFlight map[string]int // by ID
	most     map[string]int // by ID
}

func newBlocking(t *testing.T, cfg fake.Config) *blocking {
	return &blocking{
		Hypervisor: newHypervisor(t, cfg),
		held:       make(map[string]chan struct{}),
		entered:    make(chan string, 100),
		calls:      make(map[string]int),
		inFlight:   make(map[string]int),
		most:       make(map[string]int),
	}
}

// hold makes the calls of op wait until release.
func (b *blocking) hold(op string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[op] = make(chan struct{})
}

// release lets the waiting and later calls of op through.
func (b *blocking) release(op string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.held[op]; ok {
		close(c)
		delete(b.held, op)
	}
}

// waitEntered waits until a held call of "op id" waits.
func (b *blocking) waitEntered(t *testing.T, call string) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case got := <-b.entered:
			if got == call {
				return
			}
		case <-timeout:
			t.Fatalf("no held call %q within %v", call, waitFor)
		}
	}
}

// count returns how many calls of op were made for id.
func (b *blocking) count(op, id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[op+" "+id]
}

// mostAtOnce returns the most calls in flight at once for id.
func (b *blocking) mostAtOnce(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.most[id]
}

// enter counts a call of op for id and waits while op is held; leave must
// follow.
func (b *blocking) enter(ctx context.Context, op, id string) error {
	b.mu.Lock()
	b.calls[op+" "+id]++
	b.inFlight[id]++
	b.most[id] = max(b.most[id], b.inFlight[id])
	gate, held := b.held[op]
	b.mu.Unlock()
	if !held {
		return nil
	}
	b.entered <- op + " " + id
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (b *blocking) leave(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight[id]--
}

func (b *blocking) Define(ctx context.Context, spec hostproto.InstanceSpec) error {
	defer b.leave(spec.ID)
	if err := b.enter(ctx, "define", spec.ID); err != nil {
		return err
	}
	return b.Hypervisor.Define(ctx, spec)
}

func (b *blocking) Start(ctx context.Context, id string) error {
	defer b.leave(id)
	if err := b.enter(ctx, "start", id); err != nil {
		return err
	}
	return b.Hypervisor.Start(ctx, id)
}

func (b *blocking) Shutdown(ctx context.Context, id string, timeout time.Duration) error {
	defer b.leave(id)
	if err := b.enter(ctx, "shutdown", id); err != nil {
		return err
	}
	return b.Hypervisor.Shutdown(ctx, id, timeout)
}

func (b *blocking) Resume(ctx context.Context, id string) error {
	defer b.leave(id)
	if err := b.enter(ctx, "resume", id); err != nil {
		return err
	}
	return b.Hypervisor.Resume(ctx, id)
}

func (b *blocking) Pause(ctx context.Context, id string) error {
	defer b.leave(id)
	if err := b.enter(ctx, "pause", id); err != nil {
		return err
	}
	return b.Hypervisor.Pause(ctx, id)
}

func (b *blocking) Undefine(ctx context.Context, id string) error {
	defer b.leave(id)
	if err := b.enter(ctx, "undefine", id); err != nil {
		return err
	}
	return b.Hypervisor.Undefine(ctx, id)
}

func (b *blocking) Snapshot(ctx context.Context, id, snap string) (hostproto.SnapshotResult, error) {
	defer b.leave(snap)
	if err := b.enter(ctx, "snapshot", snap); err != nil {
		return hostproto.SnapshotResult{}, err
	}
	return b.Hypervisor.Snapshot(ctx, id, snap)
}
