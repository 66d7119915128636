package cloud

import (
	"sync"
	"time"
)

// Asked remembers the power changes a driver asked of its servers and did
// not wait for: Start and Stop return once the provider took the request,
// and the next sweep's list sees the change finish. Until then a repeated
// Start or Stop (a sweep that listed the server before the change showed)
// finds the change under way and makes no call. It is safe for concurrent
// use; the zero Asked is ready.
type Asked struct {
	mu    sync.Mutex
	byID  map[string]asked
	calls int // since the last prune
}

type asked struct {
	change Status // StatusStarting or StatusStopping
	at     time.Time
}

// askedKeep is how long a change is remembered: far longer than any
// provider takes to start or stop a server.
const askedKeep = time.Hour

// Ask records that change was asked of server id now.
func (a *Asked) Ask(id string, change Status) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if a.byID == nil {
		a.byID = map[string]asked{}
	}
	if a.calls++; a.calls >= 1000 {
		a.calls = 0
		for k, v := range a.byID {
			if now.Sub(v.at) > askedKeep {
				delete(a.byID, k)
			}
		}
	}
	a.byID[id] = asked{change: change, at: now}
}

// Since returns how long ago change was last asked of server id, and
// whether it was the last change asked of it.
func (a *Asked) Since(id string, change Status) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.byID[id]
	if !ok || v.change != change {
		return 0, false
	}
	return time.Since(v.at), true
}

// Forget drops what was asked of server id (it is deleted).
func (a *Asked) Forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byID, id)
}
