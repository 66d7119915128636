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

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// changes is how many sequential changes one run of BenchmarkChangeToEvent
// makes: issue 17's 30-change harness.
const changes = 30

// BenchmarkChangeToEvent is issue 17's 30-change harness: n websocket
// clients, each subscribed to instanceEvents of one tenant, and 30
// sequential changes, each a createInstance (so each is followed by the
// instance's placement and start events, as on a live system). For every
// client and change it times change-sent (just before the mutation is sent)
// → event-received (the client read the CREATED event), and reports p50/p99
// over all of them, the share delivered, and serve's own commit → hub
// latency (bc_live_event_latency_seconds) over the run. The clients run in
// the benchmark's process, beside serve on the same cores.
//
// With BC_BENCH_PROFILE=dir, serve and reconcile serve their profiles
// (BC_PPROF) and the benchmark writes each one's CPU profile and execution
// trace of the first profileFor of its changes into dir; give it
// -benchtime 20x or so for the changes to last that long.
func BenchmarkChangeToEvent(b *testing.B) {
	profileDir := os.Getenv("BC_BENCH_PROFILE")
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("%d-subscribers", n), func(b *testing.B) {
			b.StopTimer()
			o := options{hosts: 1, reconcilers: 1, hostVcpus: 100_000,
				serverEnv: []string{"BC_WS_MAX_CONNECTIONS=20000"}}
			reconcileOps := ""
			if profileDir != "" {
				reconcileOps = "http://" + freeAddr(b)
				o.serverEnv = append(o.serverEnv, "BC_PPROF=true")
				o.reconcileEnv = []string{"BC_PPROF=true"}
				o.reconcileArgs = []string{"--metrics-listen", strings.TrimPrefix(reconcileOps, "http://")}
			}
			c := start(b, o)
			ws := "ws" + strings.TrimPrefix(c.url, "http") + "/graphql"
			w := watchChanges(b, n, func(ctx context.Context, ready func()) client {
				return instanceClient(b, ctx, ws, c.member, ready)
			})
			hub0 := histogram(b, c.url, "bc_live_event_latency_seconds")
			var lat []time.Duration
			sent := 0
			profiled := func() {}
			if profileDir != "" {
				profiled = profile(b, filepath.Join(profileDir, strconv.Itoa(n)), map[string]string{"serve": c.url, "reconcile": reconcileOps})
			}
			for i := range b.N {
				for j := range changes {
					name := fmt.Sprintf("chg-%d-%d", i, j)
					b.StartTimer()
					done := w.expect(name)
					c.create(name, "RUNNING")
					select {
					case <-done:
					case <-time.After(5 * time.Second):
					}
					b.StopTimer()
					sent++
				}
			}
			profiled()
			lat = w.close()
			hub := histogram(b, c.url, "bc_live_event_latency_seconds").minus(hub0)
			slices.Sort(lat)
			b.ReportMetric(100*float64(len(lat))/float64(n*sent), "delivered-%")
			if len(lat) > 0 {
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			}
			b.ReportMetric(1000*hub.quantile(0.5), "hub-p50-ms")
			b.ReportMetric(1000*hub.quantile(0.99), "hub-p99-ms")
		})
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
// change's, such as a later event of the same instance).
type client interface {
	next(ctx context.Context) (key string, err error)
	close()
}

// changeWatch holds n clients and times, for each change, change-sent →
// event-received at each of them. It knows nothing of what a change is: a
// client says which change a message is of, so another event source (LXD's
// /1.0/events) can sit behind the same watch.
type changeWatch struct {
	n      int
	cancel context.CancelFunc
	ended  sync.WaitGroup

	mu   sync.Mutex
	sent map[string]time.Time
	// seen counts the clients a change reached; done closes at n.
	seen map[string]int
	done map[string]chan struct{}
	lat  []time.Duration
}

// watchChanges dials n clients with dial (64 at a time) and returns once
// all are subscribed.
func watchChanges(b *testing.B, n int, dial func(ctx context.Context, ready func()) client) *changeWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &changeWatch{n: n, cancel: cancel, sent: map[string]time.Time{}, seen: map[string]int{}, done: map[string]chan struct{}{}}
	b.Cleanup(func() { w.close() })
	var dialed sync.WaitGroup
	sem := make(chan struct{}, 64)
	for range n {
		sem <- struct{}{}
		dialed.Add(1)
		w.ended.Add(1)
		go func() {
			defer w.ended.Done()
			cl := dial(ctx, func() { <-sem; dialed.Done() })
			defer cl.close()
			got := map[string]bool{}
			for {
				key, err := cl.next(ctx)
				if err != nil {
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

// close ends the clients, waits for them, and returns every latency seen.
func (w *changeWatch) close() []time.Duration {
	w.cancel()
	w.ended.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lat
}

// instanceClientQuery is the subscription of the harness's clients.
const instanceClientQuery = "subscription { instanceEvents { type instance { name } } }"

// eventsClient is a harness client on serve's instanceEvents: its key of a
// CREATED event is the instance's name.
type eventsClient struct{ conn *websocket.Conn }

// instanceClient subscribes to instanceEvents at url.
func instanceClient(b *testing.B, ctx context.Context, url, token string, ready func()) client {
	return eventsClient{dialSubscriber(b, ctx, url, token, instanceClientQuery, ready)}
}

func (c eventsClient) next(ctx context.Context) (string, error) {
	if c.conn == nil {
		return "", errors.New("not connected")
	}
	var msg struct {
		Type    string `json:"type"`
		Payload struct {
			Data struct {
				InstanceEvents struct {
					Type     string
					Instance struct{ Name string }
				} `json:"instanceEvents"`
			} `json:"data"`
		} `json:"payload"`
	}
	if err := wsjson.Read(ctx, c.conn, &msg); err != nil {
		return "", err
	}
	switch ev := msg.Payload.Data.InstanceEvents; {
	case msg.Type == "ping":
		return "", wsjson.Write(ctx, c.conn, map[string]any{"type": "pong"})
	case msg.Type == "next" && ev.Type == "CREATED":
		return ev.Instance.Name, nil
	}
	return "", nil
}

func (c eventsClient) close() {
	if c.conn != nil {
		c.conn.CloseNow()
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
