package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
)

// running watches the event channels and tells when an instance first
// reaches a state, RUNNING unless told.
type running struct {
	state   string
	mu      sync.Mutex
	at      map[string]time.Time
	waiters map[string]chan struct{}
	n       int
	all     chan struct{}
	want    int
}

func watchRunning(b testing.TB, c *cluster, want int) *running {
	return watchState(b, c, "RUNNING", want)
}

// watchState tells when instances first reach state, and when want of them
// did (want -1: never).
func watchState(b testing.TB, c *cluster, state string, want int) *running {
	opts, _ := redis.ParseURL(c.redisURL)
	rdb := redis.NewClient(opts)
	sub := rdb.PSubscribe(context.Background(), "bc:events:*")
	if _, err := sub.Receive(context.Background()); err != nil {
		b.Fatal(err)
	}
	w := &running{state: state, at: map[string]time.Time{}, waiters: map[string]chan struct{}{}, all: make(chan struct{}), want: want}
	ch := sub.Channel(redis.WithChannelSize(100_000))
	go func() {
		for msg := range ch {
			var ev events.InstanceEvent
			if json.Unmarshal([]byte(msg.Payload), &ev) != nil || ev.Instance.State != w.state {
				continue
			}
			now := time.Now()
			w.mu.Lock()
			if _, done := w.at[ev.Instance.ID]; !done {
				w.at[ev.Instance.ID] = now
				w.n++
				if ch, ok := w.waiters[ev.Instance.ID]; ok {
					close(ch)
				}
				if w.n == w.want {
					close(w.all)
				}
			}
			w.mu.Unlock()
		}
	}()
	b.Cleanup(func() { sub.Close(); rdb.Close() })
	return w
}

// wait blocks until id is RUNNING.
func (w *running) wait(b testing.TB, id string) time.Time {
	w.mu.Lock()
	if at, ok := w.at[id]; ok {
		w.mu.Unlock()
		return at
	}
	ch := make(chan struct{})
	w.waiters[id] = ch
	w.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		b.Fatalf("%s not RUNNING after 60 s", id)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at[id]
}

// BenchmarkCreateToRunning measures, one instance at a time, the time from
// sending createInstance to the RUNNING event, with a zero-delay fake host:
// the control plane's own latency through API, outbox, relay, stream,
// reconciler, gateway long-poll, host daemon and report.
func BenchmarkCreateToRunning(b *testing.B) {
	c := start(b, options{hosts: 1, reconcilers: 1, hostVcpus: 100_000})
	w := watchRunning(b, c, -1)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		id := c.create(fmt.Sprintf("vm-%d", i), "RUNNING")
		lat = append(lat, w.wait(b, id).Sub(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
}

// cpuTime reads a process's user and system CPU time from /proc.
func cpuTime(b testing.TB, p *proc) time.Duration {
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	return pidCPUTime(b, pid)
}

// pidCPUTime is the user and system CPU time process pid has used, from /proc.
func pidCPUTime(b testing.TB, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
