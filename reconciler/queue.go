package reconciler

import (
	"sync"
	"time"
)

// queue hands keys (a topic's keys, such as instance IDs) to workers with the guarantees of
// client-go's workqueue: a key is never worked on by two workers at once; a
// key added several times before it is taken is taken once; a key added
// while being worked on is taken again afterwards; failures back off per
// key. Each key carries the stream entries it stands for, acknowledged only
// once work on the key succeeded.
type queue[K comparable] struct {
	mu         sync.Mutex
	ready      []K
	queued     map[K]bool
	working    map[K]bool
	dirty      map[K]bool
	entries    map[K][]string // stream entry IDs not yet acknowledged
	failures   map[K]int
	signal     chan struct{}
	closed     bool
	closedChan chan struct{}
}

func newQueue[K comparable]() *queue[K] {
	return &queue[K]{
		queued:     map[K]bool{},
		working:    map[K]bool{},
		dirty:      map[K]bool{},
		entries:    map[K][]string{},
		failures:   map[K]int{},
		signal:     make(chan struct{}, 1),
		closedChan: make(chan struct{}),
	}
}

// add queues key for the stream entries ids.
func (q *queue[K]) add(key K, ids ...string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.entries[key] = append(q.entries[key], ids...)
	q.push(key)
}

func (q *queue[K]) push(key K) {
	if q.working[key] {
		q.dirty[key] = true
		return
	}
	if q.queued[key] {
		return
	}
	q.queued[key] = true
	q.ready = append(q.ready, key)
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// get blocks until a key is ready, and returns it with the entries it
// stands for; ok is false once the queue is closed.
func (q *queue[K]) get() (key K, ids []string, ok bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return key, nil, false
		}
		if len(q.ready) > 0 {
			key = q.ready[0]
			q.ready = q.ready[1:]
			delete(q.queued, key)
			q.working[key] = true
			ids = q.entries[key]
			delete(q.entries, key)
			more := len(q.ready) > 0
			q.mu.Unlock()
			if more { // pass the signal on to another worker
				select {
				case q.signal <- struct{}{}:
				default:
				}
			}
			return key, ids, true
		}
		q.mu.Unlock()
		select {
		case <-q.signal:
		case <-q.closedChan:
		}
	}
}

// done ends work on key. On success its failures are forgotten; on failure
// its entries are kept and it is queued again after a backoff.
func (q *queue[K]) done(key K, ids []string, failed bool) {
	if failed {
		q.retry(key, ids, 0)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.working, key)
	delete(q.failures, key)
	if q.dirty[key] {
		delete(q.dirty, key)
		q.push(key)
	}
}

// retry ends failed work on key: its entries are kept and it is queued
// again after its backoff, or after wait if that is longer (a provider
// asked us to wait).
func (q *queue[K]) retry(key K, ids []string, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.working, key)
	q.entries[key] = append(ids, q.entries[key]...)
	n := q.failures[key]
	q.failures[key] = n + 1
	delete(q.dirty, key)
	time.AfterFunc(max(backoff(n), wait), func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.push(key)
	})
}

// again queues key to be worked on once more right away.
func (q *queue[K]) again(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.push(key)
}

// after queues key to be worked on once more after d.
func (q *queue[K]) after(key K, d time.Duration) {
	time.AfterFunc(d, func() { q.again(key) })
}

func (q *queue[K]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.closedChan)
	}
}

// backoff is 5 ms doubling per failure, capped at 30 s.
func backoff(failures int) time.Duration {
	d := 5 * time.Millisecond << min(failures, 13)
	return min(d, 30*time.Second)
}
