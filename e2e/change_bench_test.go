package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// changes is how many sequential changes one run of BenchmarkChangeToEvent
// makes: issue 17's 30-change harness.
const changes = 30

// BenchmarkChangeToEvent is issue 17's 30-change harness: n websocket
// clients and 30 sequential changes, change-sent (just before the change is
// sent) → event-received (the client read that change's event) timed per
// client and change, with p50/p99 over all of them and the share delivered.
// One harness (timeChanges) runs three targets side by side for each n,
// interleaved in one run:
//
//   - ours: serve's instanceEvents, each change a createInstance (so each is
//     followed by the instance's placement and start events, as on a live
//     system), with serve's own stamp → hub latency
//     (bc_live_event_latency_seconds) over the run, and that split into
//     stamp → commit and commit → Redis (relayWatch);
//   - 2-serves: the same with the clients spread over two serve processes;
//   - lxd: LXD 5.0.2's /1.0/events?type=lifecycle, each change a PATCH of
//     the default profile's description (lxd_bench_test.go).
//
// Ours' clients check every instance's versions: no event twice, none
// missed. The clients run in the benchmark's process, beside the servers on
// the same cores.
//
// With BC_BENCH_PROFILE=dir, serve and reconcile serve their profiles
// (BC_PPROF) and ours writes each one's CPU profile and execution trace of
// the first profileFor of its run into dir; give it -benchtime 20x or so
// for the changes to last that long.
func BenchmarkChangeToEvent(b *testing.B) {
	profileDir := os.Getenv("BC_BENCH_PROFILE")
	lxd := sync.OnceValues(func() (*lxdTarget, error) { return startLXD(b) })
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("%d-subscribers", n), func(b *testing.B) {
			b.Run("ours", func(b *testing.B) { benchOurs(b, n, 1, filepath.Join(profileDir, strconv.Itoa(n))) })
			b.Run("2-serves", func(b *testing.B) { benchOurs(b, n, 2, "") })
			b.Run("lxd", func(b *testing.B) {
				b.StopTimer() // the daemon's start, on the first run, is not a change
				t, err := lxd()
				if err != nil {
					b.Skipf("NO LXD, NO SIDE-BY-SIDE ROW: %v (make bench installs Debian's lxd: scripts/lxd.sh install)", err)
				}
				report(b, n, timeChanges(b, t, n))
			})
		})
	}
}

// benchOurs runs the harness on a cluster of serves serve processes, the
// clients spread over them round-robin; with a profile prefix (the
// directory BC_BENCH_PROFILE names) it profiles serve and reconcile.
func benchOurs(b *testing.B, n, serves int, profilePrefix string) {
	b.StopTimer()
	o := options{serves: serves, hosts: 1, reconcilers: 1, hostVcpus: 100_000,
		serverEnv: []string{"BC_WS_MAX_CONNECTIONS=20000"}}
	profiling := os.Getenv("BC_BENCH_PROFILE") != "" && profilePrefix != ""
	reconcileOps := ""
	if profiling {
		reconcileOps = "http://" + freeAddr(b)
		o.serverEnv = append(o.serverEnv, "BC_PPROF=true")
		o.reconcileEnv = []string{"BC_PPROF=true"}
		o.reconcileArgs = []string{"--metrics-listen", strings.TrimPrefix(reconcileOps, "http://")}
	}
	c := start(b, o)
	hub0 := hubLatency(b, c.urls)
	profiled := func() {}
	if profiling {
		profiled = profile(b, profilePrefix, map[string]string{"serve": c.url, "reconcile": reconcileOps})
	}
	relay := watchRelay(b, c)
	r := timeChanges(b, &ours{c: c}, n)
	profiled()
	hub := hubLatency(b, c.urls).minus(hub0)
	report(b, n, r)
	relay.report(b)
	b.ReportMetric(1000*hub.quantile(0.5), "hub-p50-ms")
	b.ReportMetric(1000*hub.quantile(0.99), "hub-p99-ms")
}

// hubLatency is bc_live_event_latency_seconds summed over the serves at
// urls.
func hubLatency(b *testing.B, urls []string) buckets {
	var sum buckets
	for _, u := range urls {
		sum = sum.plus(histogram(b, u, "bc_live_event_latency_seconds"))
	}
	return sum
}

// target is an event source the harness times: it dials clients and makes
// changes, and its clients say which change a message is of.
type target interface {
	// dial connects the i-th client and calls ready once it is subscribed.
	dial(b *testing.B, ctx context.Context, i int, ready func()) client
	// change makes the change named key and returns once it is accepted.
	change(b *testing.B, key string)
}

// timed is what one run of the harness saw: every latency, how many
// changes were sent, and what went wrong at clients (an event seen twice or
// missed, a connection the server closed).
type timed struct {
	lat    []time.Duration
	sent   int
	faults []error
}

// timeChanges dials n clients of t and makes b.N × changes sequential
// changes, each waited for at every client (at most 5 s), timing
// change-sent → event-received at each.
func timeChanges(b *testing.B, t target, n int) timed {
	b.StopTimer()
	w := watchChanges(b, n, t)
	sent := 0
	for i := range b.N {
		for j := range changes {
			key := fmt.Sprintf("chg-%d-%d", i, j)
			b.StartTimer()
			done := w.expect(key)
			t.change(b, key)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			b.StopTimer()
			sent++
		}
	}
	lat, faults := w.close()
	return timed{lat: lat, sent: sent, faults: faults}
}

// report reports a run's p50, p99 and share delivered, and fails the
// benchmark on a client's fault.
func report(b *testing.B, n int, r timed) {
	for i, err := range r.faults {
		if i == 5 {
			b.Errorf("… and %d more client faults", len(r.faults)-i)
			break
		}
		b.Errorf("client: %v", err)
	}
	slices.Sort(r.lat)
	b.ReportMetric(100*float64(len(r.lat))/float64(n*r.sent), "delivered-%")
	if len(r.lat) > 0 {
		b.ReportMetric(ms(r.lat[len(r.lat)/2]), "p50-ms")
		b.ReportMetric(ms(r.lat[len(r.lat)*99/100]), "p99-ms")
	}
}

// profileFor is how long BC_BENCH_PROFILE's profiles and traces last.
const profileFor = 5 * time.Second

// profile takes a CPU profile and an execution trace of each process
// (name → its URL serving /debug/pprof/) at once, for profileFor, into
// files prefix-name.cpu and prefix-name.trace; the function it returns
// waits for them.
func profile(b *testing.B, prefix string, procs map[string]string) (wait func()) {
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	secs := strconv.Itoa(int(profileFor.Seconds()))
	for name, url := range procs {
		for kind, path := range map[string]string{"cpu": "profile", "trace": "trace"} {
			wg.Go(func() {
				resp, err := http.Get(url + "/debug/pprof/" + path + "?seconds=" + secs)
				if err != nil {
					b.Errorf("%s %s: %v", name, kind, err)
					return
				}
				defer resp.Body.Close()
				f, err := os.Create(prefix + "-" + name + "." + kind)
				if err != nil {
					b.Error(err)
					return
				}
				defer f.Close()
				if _, err := io.Copy(f, resp.Body); err != nil {
					b.Errorf("%s %s: %v", name, kind, err)
				}
			})
		}
	}
	return wg.Wait
}

// client is one subscriber of the harness: next blocks for the next
// change it was told of and returns its key ("" for a message that is no
// change's, such as a later event of the same instance). An error other
// than its context's end is a fault the benchmark reports.
type client interface {
	next(ctx context.Context) (key string, err error)
	close()
}

// changeWatch holds n clients and times, for each change, change-sent →
// event-received at each of them. It knows nothing of what a change is: a
// client says which change a message is of, so another event source (LXD's
// /1.0/events) sits behind the same watch.
type changeWatch struct {
	n      int
	ctx    context.Context
	cancel context.CancelFunc
	ended  sync.WaitGroup

	mu   sync.Mutex
	sent map[string]time.Time
	// seen counts the clients a change reached; done closes at n.
	seen   map[string]int
	done   map[string]chan struct{}
	lat    []time.Duration
	faults []error
}

// watchChanges dials n clients of t (64 at a time) and returns once all
// are subscribed.
func watchChanges(b *testing.B, n int, t target) *changeWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &changeWatch{n: n, ctx: ctx, cancel: cancel, sent: map[string]time.Time{}, seen: map[string]int{}, done: map[string]chan struct{}{}}
	b.Cleanup(func() { w.close() })
	var dialed sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		dialed.Add(1)
		w.ended.Add(1)
		go func() {
			defer w.ended.Done()
			cl := t.dial(b, ctx, i, func() { <-sem; dialed.Done() })
			defer cl.close()
			got := map[string]bool{}
			for {
				key, err := cl.next(ctx)
				if err != nil {
					w.fault(fmt.Errorf("client %d: %w", i, err))
					return
				}
				if key != "" && !got[key] {
					got[key] = true
					w.saw(key, time.Now())
				}
			}
		}()
	}
	dialed.Wait()
	return w
}

// expect notes that change key is being sent now; the channel closes when
// every client has received it.
func (w *changeWatch) expect(key string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent[key] = time.Now()
	w.done[key] = make(chan struct{})
	return w.done[key]
}

func (w *changeWatch) saw(key string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sent, ok := w.sent[key]
	if !ok {
		return // a change of someone else's
	}
	w.lat = append(w.lat, at.Sub(sent))
	if w.seen[key]++; w.seen[key] == w.n {
		close(w.done[key])
	}
}

// fault records a client's error, unless the watch is closing.
func (w *changeWatch) fault(err error) {
	if w.ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults = append(w.faults, err)
}

// close ends the clients, waits for them, and returns every latency seen
// and every client's fault.
func (w *changeWatch) close() ([]time.Duration, []error) {
	w.cancel()
	w.ended.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lat, w.faults
}

// ours is the harness's target on our serves: a change creates an instance
// named by its key, and the i-th client subscribes at the i-th serve
// round-robin.
type ours struct{ c *cluster }

func (o *ours) dial(b *testing.B, ctx context.Context, i int, ready func()) client {
	url := o.c.urls[i%len(o.c.urls)]
	ws := "ws" + strings.TrimPrefix(url, "http") + "/graphql"
	conn := dialSubscriber(b, ctx, ws, o.c.member, instanceClientQuery, ready)
	if conn == nil {
		return &eventsClient{}
	}
	return &eventsClient{conn: conn, seq: sequence{}}
}

func (o *ours) change(_ *testing.B, key string) { o.c.create(key, "RUNNING") }

// instanceClientQuery is the subscription of the harness's clients.
const instanceClientQuery = "subscription { instanceEvents { type version instance { id name } } }"

// eventsClient is a harness client on serve's instanceEvents: its key of a
// CREATED event is the instance's name. It checks every instance's
// versions as they come.
type eventsClient struct {
	conn *frameClient
	seq  sequence
}

func (c *eventsClient) next(ctx context.Context) (string, error) {
	if c.conn == nil {
		return "", errors.New("not connected")
	}
	msg, err := c.conn.read()
	if err != nil {
		return "", err
	}
	t, err := msgType(msg)
	if err != nil {
		return "", err
	}
	switch t {
	case "ping":
		return "", c.conn.writeJSON(map[string]any{"type": "pong"})
	case "next":
		ev, id, version, err := instanceEvent(msg)
		if err != nil {
			return "", err
		}
		if err := c.seq.next(id, version); err != nil {
			return "", err
		}
		if typ, err := jsonPath(ev, "type"); err != nil || string(typ) != `"CREATED"` {
			return "", err
		}
		name, err := jsonPath(ev, "instance", "name")
		if err != nil {
			return "", err
		}
		raw, err := jsonString(name)
		return string(raw), err
	}
	return "", nil
}

func (c *eventsClient) close() {
	if c.conn != nil {
		c.conn.close()
	}
}

// buckets is a Prometheus histogram read from /metrics: cumulative counts
// by upper bound, in order.
type buckets struct {
	le    []float64
	count []float64
}

// histogram reads the histogram name from the /metrics of the serve at url.
func histogram(b testing.TB, url, name string) buckets {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var h buckets
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+`_bucket{le="`)
		if !ok {
			continue
		}
		le, count, _ := strings.Cut(rest, `"} `)
		l, _ := strconv.ParseFloat(le, 64)
		n, _ := strconv.ParseFloat(count, 64)
		h.le, h.count = append(h.le, l), append(h.count, n)
	}
	return h
}

// plus is h's counts and another reading's, bucket by bucket (the same
// buckets, or h empty).
func (h buckets) plus(other buckets) buckets {
	if len(h.count) == 0 {
		return other
	}
	out := buckets{le: h.le, count: slices.Clone(h.count)}
	for i := range out.count {
		if i < len(other.count) {
			out.count[i] += other.count[i]
		}
	}
	return out
}

// minus is h's counts less those of an earlier reading.
func (h buckets) minus(earlier buckets) buckets {
	out := buckets{le: h.le, count: slices.Clone(h.count)}
	for i := range out.count {
		if i < len(earlier.count) {
			out.count[i] -= earlier.count[i]
		}
	}
	return out
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linearly within the bucket it falls in.
func (h buckets) quantile(q float64) float64 {
	if len(h.count) == 0 || h.count[len(h.count)-1] == 0 {
		return math.NaN()
	}
	rank := q * h.count[len(h.count)-1]
	lower, below := 0.0, 0.0
	for i, c := range h.count {
		if c >= rank {
			if math.IsInf(h.le[i], 1) {
				return lower
			}
			return lower + (h.le[i]-lower)*(rank-below)/(c-below)
		}
		lower, below = h.le[i], c
	}
	return lower
}
