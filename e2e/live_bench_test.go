package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkSubscribers holds n instanceEvents subscriptions (one websocket
// each, all of one tenant, so every event goes to every subscriber) on one
// serve process, or spread round-robin over two (the -2-serves cases),
// changes instances through the API, and measures each delivery's latency
// from the change's commit to the client, and the serve processes' memory
// (summed over them). Every client checks each instance's versions: no
// event twice, none missed.
// perSecond is how many changes a second the driver makes; serve runs with
// GOMEMLIMIT=900MiB, as a deployment holding 10,000 websockets would.
func BenchmarkSubscribers(b *testing.B) {
	for _, c := range []struct{ subscribers, perSecond, serves int }{
		{1000, 20, 1}, {1000, 20, 2}, {10000, 2, 1}, {10000, 2, 2}, {10000, 20, 1},
	} {
		name := fmt.Sprintf("%d-subscribers-%d-changes-per-s", c.subscribers, c.perSecond)
		if c.serves > 1 {
			name += fmt.Sprintf("-%d-serves", c.serves)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				benchSubscribers(b, c.subscribers, c.perSecond, c.serves, profilePrefix(name))
			}
		})
	}
}

// profilePrefix is where BC_BENCH_PROFILE's profiles of the named case
// go: "" when it is not set.
func profilePrefix(name string) string {
	if dir := os.Getenv("BC_BENCH_PROFILE"); dir != "" {
		return filepath.Join(dir, name)
	}
	return ""
}

// With a profile prefix, serve runs with BC_PPROF and the first serve's heap
// and goroutine profiles with every subscriber idle, its CPU profile and
// execution trace over the first profileFor of the changes, and its
// goroutine and block profiles after them, are written beside it.
func benchSubscribers(b *testing.B, n, perSecond, serves int, profilePrefix string) {
	b.StopTimer()
	o := options{serves: serves, reconcilers: 1, serverEnv: []string{"BC_WS_MAX_CONNECTIONS=20000", "GOMEMLIMIT=900MiB"}}
	if profilePrefix != "" {
		o.serverEnv = append(o.serverEnv, "BC_PPROF=true")
	}
	c := start(b, o)
	var ids []string
	for i := range 10 {
		ids = append(ids, c.create(fmt.Sprintf("vm-%d", i), "RUNNING"))
	}
	rss0 := servesRSS(b, c)

	events := 5 * perSecond // five seconds of changes
	var (
		mu  sync.Mutex
		lat = make([]time.Duration, 0, n*events)
		got sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dial sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		got.Add(1)
		dial.Add(1)
		sem <- struct{}{}
		ws := "ws" + strings.TrimPrefix(c.urls[i%len(c.urls)], "http") + "/graphql"
		go func() {
			defer got.Done()
			conn := dialSubscriber(b, ctx, ws, c.member, instanceEventsQuery, func() { <-sem; dial.Done() })
			if conn == nil {
				return
			}
			defer conn.close()
			seq := sequence{}
			seen := 0
			local := make([]time.Duration, 0, events)
			for seen < events {
				msg, err := conn.read()
				if err != nil {
					break
				}
				at := time.Now()
				t, err := msgType(msg)
				if err == nil && t == "next" {
					err = deliveryLatency(msg, at, seq, &local)
					seen++
				} else if t == "ping" {
					err = conn.writeJSON(map[string]any{"type": "pong"})
				}
				if err != nil {
					b.Errorf("client %d: %v", i, err)
					break
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	dial.Wait()
	rssSubscribed := servesRSS(b, c)
	if profilePrefix != "" {
		// What the idle subscribers hold: the first serve's heap (after
		// a collection), its memory statistics and goroutines before any
		// change.
		for kind, q := range map[string]string{"heap": "heap?gc=1", "memstats": "heap?debug=1", "goroutine": "goroutine"} {
			if err := fetchTo(c.url+"/debug/pprof/"+q, profilePrefix+"-serve.idle-"+kind); err != nil {
				b.Errorf("serve idle %s profile: %v", kind, err)
			}
		}
	}

	b.StartTimer()
	start := time.Now()
	clientCPU, serveCPU := pidCPUTime(b, os.Getpid()), servesCPU(b, c)
	profiled := func() {}
	if profilePrefix != "" {
		profiled = profile(b, profilePrefix, map[string]string{"serve": c.url})
	}
	// Each change is an event to every subscriber.
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	for i := range events {
		<-tick.C
		op := []string{"stopInstance", "startInstance"}[(i/len(ids))%2]
		c.set(op, ids[i%len(ids)])
	}
	tick.Stop()
	if profilePrefix != "" {
		for _, kind := range []string{"goroutine", "block"} {
			if err := fetchTo(c.url+"/debug/pprof/"+kind, profilePrefix+"-serve."+kind); err != nil {
				b.Errorf("serve %s profile: %v", kind, err)
			}
		}
	}
	done := make(chan struct{})
	go func() { got.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cancel()
		<-done
	}
	b.StopTimer()
	took := time.Since(start)
	clientCPU, serveCPU = pidCPUTime(b, os.Getpid())-clientCPU, servesCPU(b, c)-serveCPU
	profiled()
	if len(lat) < n*events {
		b.Fatalf("%d of %d deliveries", len(lat), n*events)
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(float64(rssSubscribed)/(1<<20), "serve-MiB-subscribed")
	b.ReportMetric(float64(servesRSS(b, c))/(1<<20), "serve-MiB-after")
	b.ReportMetric(float64(rss0)/(1<<20), "serve-MiB-idle")
	b.ReportMetric(float64(rssSubscribed-rss0)/float64(n)/(1<<10), "serve-KiB-per-idle-subscriber")
	b.ReportMetric(float64(len(lat))/took.Seconds(), "deliveries/s")
	// The clients share the cores with serve: what each took of them.
	b.ReportMetric(clientCPU.Seconds()/took.Seconds(), "client-cores")
	b.ReportMetric(serveCPU.Seconds()/took.Seconds(), "serve-cores")
}

// deliveryLatency appends to lat the latency of msg, an instanceEvents
// "next" message, from its instance's updatedAt to at, and checks its
// version against seq.
func deliveryLatency(msg []byte, at time.Time, seq sequence, lat *[]time.Duration) error {
	ev, id, version, err := instanceEvent(msg)
	if err != nil {
		return err
	}
	v, err := jsonPath(ev, "instance", "updatedAt")
	if err != nil {
		return err
	}
	raw, err := jsonString(v)
	if err != nil {
		return err
	}
	updated, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		return fmt.Errorf("updatedAt: %w", err)
	}
	*lat = append(*lat, at.Sub(updated))
	return seq.next(id, version)
}

// servesCPU is the CPU time c's serve processes have used together.
func servesCPU(b testing.TB, c *cluster) time.Duration {
	var sum time.Duration
	for _, p := range c.serves {
		sum += cpuTime(b, p)
	}
	return sum
}

// instanceEventsQuery is the subscription BenchmarkSubscribers' clients hold.
const instanceEventsQuery = "subscription { instanceEvents { type version instance { id state updatedAt } } }"

// dialSubscriber connects, authenticates and subscribes with query, then
// calls ready; nil when it could not.
func dialSubscriber(b *testing.B, ctx context.Context, url, token, query string, ready func()) *frameClient {
	defer ready()
	conn, err := dialWSURL(ctx, url, "graphql-transport-ws")
	if err != nil {
		b.Errorf("dial: %v", err)
		return nil
	}
	err = conn.writeJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	if err == nil {
		var ack []byte
		if ack, err = conn.read(); err == nil {
			if t, _ := msgType(ack); t != "connection_ack" {
				err = fmt.Errorf("%.200s", ack)
			}
		}
	}
	if err == nil {
		err = conn.writeJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query}})
	}
	if err != nil {
		b.Errorf("init: %v", err)
		conn.close()
		return nil
	}
	return conn
}

// servesRSS is the resident memory of c's serve processes together.
func servesRSS(b testing.TB, c *cluster) int64 {
	var sum int64
	for _, p := range c.serves {
		sum += rss(b, p)
	}
	return sum
}

// rss reads a process's resident memory from /proc.
func rss(b testing.TB, p *proc) int64 {
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
