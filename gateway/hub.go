package gateway

import (
	"context"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
)

// hub fans the process's one Redis subscription out to the long-polls
// waiting on each host.
type hub struct {
	mu      sync.Mutex
	waiters map[uuid.UUID]map[chan struct{}]bool
}

func newHub() *hub {
	return &hub{waiters: map[uuid.UUID]map[chan struct{}]bool{}}
}

func (h *hub) subscribe(host uuid.UUID) chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters[host] == nil {
		h.waiters[host] = map[chan struct{}]bool{}
	}
	h.waiters[host][ch] = true
	return ch
}

func (h *hub) unsubscribe(host uuid.UUID, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters[host], ch)
	if len(h.waiters[host]) == 0 {
		delete(h.waiters, host)
	}
}

// waiting counts the long-polls waiting, on every host.
func (h *hub) waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, chs := range h.waiters {
		n += len(chs)
	}
	return n
}

func (h *hub) wake(host uuid.UUID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[host] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// run subscribes to every host's channel until ctx ends. go-redis
// resubscribes after a dropped connection; a wake lost meanwhile only
// delays a host until its long-poll times out.
func (h *hub) run(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	sub := rdb.PSubscribe(ctx, prefix+events.HostChannelPrefix+"*")
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg, ok := <-sub.Channel():
			if !ok {
				return nil
			}
			if id, err := uuid.Parse(strings.TrimPrefix(msg.Channel, prefix+events.HostChannelPrefix)); err == nil {
				h.wake(id)
			}
		}
	}
}
