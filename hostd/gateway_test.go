package hostd_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// gateway is a fake host gateway: it serves one host's spec long-poll from a
// spec the test sets, and records the reports it is posted. It checks the
// protocol header of every request and refuses a wrong credential with 401.
type gateway struct {
	t   *testing.T
	url string

	mu         sync.Mutex
	credential string
	down       bool // answer every request with 503
	hold       time.Duration
	spec       hostproto.NodeSpec
	changed    chan struct{} // closed when spec changes

	// reports receives every report posted, a partial one made whole with
	// the statuses of the reports before it, as the gateway reads it.
	reports chan hostproto.Report
	// posted receives every report posted, as it was posted.
	posted chan hostproto.Report
	// held are the statuses the reports so far make, by instance ID.
	held map[string]hostproto.InstanceStatus
	// refused receives every request answered 401 or 503.
	refused chan refusal
	// unchanged receives the query of every long-poll answered 204.
	unchanged chan map[string]string
	// runtimes receives the runtime header of every request ("" when
	// absent).
	runtimes chan string

	// version is the protocol version the gateway serves (speak); default
	// hostproto.Version.
	version int

	// deltas: entries carry their generation, and a poll after a
	// generation > 0 is answered with a delta (version 5), as the gateway
	// does (serveDeltas).
	deltas bool
	// spoil, when set, changes the next delta served, once.
	spoil func(*hostproto.NodeSpec)
	// polls receives the after of every spec long-poll.
	polls chan int64
	// served receives every spec served, as it was served.
	served chan hostproto.NodeSpec
}

// refusal is a request the gateway refused.
type refusal struct {
	path string
	at   time.Time
}

const credential = "bch_test_credential"

// newGateway starts a gateway that accepts credential and holds long-polls
// for their full wait. It stops at the end of the test, after any daemon
// started later.
func newGateway(t *testing.T) *gateway {
	g := &gateway{
		t:          t,
		credential: credential,
		hold:       hostproto.MaxWaitSeconds * time.Second,
		changed:    make(chan struct{}),
		reports:    make(chan hostproto.Report, 10000),
		posted:     make(chan hostproto.Report, 10000),
		refused:    make(chan refusal, 10000),
		unchanged:  make(chan map[string]string, 10000),
		runtimes:   make(chan string, 10000),
		polls:      make(chan int64, 10000),
		served:     make(chan hostproto.NodeSpec, 10000),
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// setSpec makes instances the host's spec, at the next generation, and
// returns that generation.
func (g *gateway) setSpec(instances ...hostproto.InstanceSpec) int64 {
	return g.update(func(s *hostproto.NodeSpec) { s.Instances = instances })
}

// setCommands makes commands the host's commands, at the next generation,
// and returns that generation.
func (g *gateway) setCommands(commands ...hostproto.Command) int64 {
	return g.update(func(s *hostproto.NodeSpec) { s.Commands = commands })
}

// update changes the spec with change, at the next generation, and returns
// that generation.
func (g *gateway) update(change func(*hostproto.NodeSpec)) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	spec := hostproto.NodeSpec{
		Protocol:   g.versionLocked(),
		HostID:     "host_test",
		Generation: g.spec.Generation + 1,
		Instances:  g.spec.Instances,
		Commands:   g.spec.Commands,
	}
	change(&spec)
	if g.deltas {
		spec.Instances = entryGenerations(g.spec.Instances, spec.Instances, spec.Generation)
	}
	g.spec = spec
	close(g.changed)
	g.changed = make(chan struct{})
	return g.spec.Generation
}

func (g *gateway) setCredential(c string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.credential = c
}

func (g *gateway) setDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = down
}

// setHold sets how long a long-poll waits for a change before its 204, when
// that is shorter than the wait the host asked for.
func (g *gateway) setHold(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold = d
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got, v := r.Header.Get(hostproto.Header), g.speaks(); got != strconv.Itoa(v) {
		g.t.Errorf("%s %s: %s header %q, want %d", r.Method, r.URL.Path, hostproto.Header, got, v)
		http.Error(w, "unsupported protocol", http.StatusBadRequest)
		return
	}
	record(g.runtimes, r.Header.Get(hostproto.RuntimeHeader))
	g.mu.Lock()
	want, down := "Bearer "+g.credential, g.down
	g.mu.Unlock()
	switch {
	case down:
		g.refuse(w, r, http.StatusServiceUnavailable)
	case r.Header.Get("Authorization") != want:
		g.refuse(w, r, http.StatusUnauthorized)
	case r.Method == http.MethodGet && r.URL.Path == hostproto.SpecPathOf(g.speaks()):
		g.serveSpec(w, r)
	case r.Method == http.MethodPost && r.URL.Path == hostproto.ReportPathOf(g.speaks()):
		g.serveReport(w, r)
	default:
		g.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

func (g *gateway) refuse(w http.ResponseWriter, r *http.Request, status int) {
	record(g.refused, refusal{path: r.URL.Path, at: time.Now()})
	http.Error(w, http.StatusText(status), status)
}

func (g *gateway) serveSpec(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err := strconv.ParseInt(q.Get("after"), 10, 64)
	if err != nil {
		g.t.Errorf("spec: after %q: %v", q.Get("after"), err)
	}
	wait, err := strconv.Atoi(q.Get("wait"))
	if err != nil || wait < 1 || wait > hostproto.MaxWaitSeconds {
		g.t.Errorf("spec: wait %q, want 1 to %d seconds", q.Get("wait"), hostproto.MaxWaitSeconds)
	}
	record(g.polls, after)
	g.mu.Lock()
	hold := min(g.hold, time.Duration(wait)*time.Second)
	g.mu.Unlock()
	timer := time.NewTimer(hold)
	defer timer.Stop()
	for {
		g.mu.Lock()
		spec, changed := g.spec, g.changed
		g.mu.Unlock()
		if spec.Generation > after {
			spec = g.delta(spec, after)
			record(g.served, spec)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(spec)
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			record(g.unchanged, map[string]string{"after": q.Get("after"), "wait": q.Get("wait")})
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (g *gateway) serveReport(w http.ResponseWriter, r *http.Request) {
	var report hostproto.Report
	if err := json.NewDecoder(r.Body).Decode(&report); err != nil {
		g.t.Errorf("report: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if v := g.speaks(); report.Protocol != v {
		g.t.Errorf("report protocol %d, want %d", report.Protocol, v)
	}
	record(g.posted, report)
	record(g.reports, g.whole(report))
	w.WriteHeader(http.StatusNoContent)
}

// whole makes a partial report whole with the statuses of the reports
// before it: its statuses replace theirs, and its absent instances leave.
func (g *gateway) whole(r hostproto.Report) hostproto.Report {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.Partial && g.held == nil {
		g.t.Errorf("a partial report before any whole one: %+v", r)
	}
	if !r.Partial || g.held == nil {
		g.held = make(map[string]hostproto.InstanceStatus, len(r.Instances))
	}
	for _, st := range r.Instances {
		g.held[st.ID] = st
	}
	for _, id := range r.Absent {
		delete(g.held, id)
	}
	r.Partial, r.Absent, r.Instances = false, nil, make([]hostproto.InstanceStatus, 0, len(g.held))
	for _, st := range g.held {
		r.Instances = append(r.Instances, st)
	}
	sort.Slice(r.Instances, func(i, j int) bool { return r.Instances[i].ID < r.Instances[j].ID })
	return r
}

// drain drops the reports received so far, so that a test waits for a
// report made after, say, a daemon it stopped.
func (g *gateway) drain() {
	for {
		select {
		case <-g.reports:
		default:
			return
		}
	}
}

// record sends v on c, or drops it when the test has let c fill up.
func record[T any](c chan T, v T) {
	select {
	case c <- v:
	default:
	}
}

// speak makes the gateway serve protocol version v (and only it); call it
// before the daemon starts, which must speak v too.
func (g *gateway) speak(v int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.version = v
}

// speaks is the protocol version the gateway serves.
func (g *gateway) speaks() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.versionLocked()
}

func (g *gateway) versionLocked() int {
	if g.version == 0 {
		return hostproto.Version
	}
	return g.version
}

// serveDeltas makes the gateway serve deltas as the version 5 gateway
// does; call it before the first spec.
func (g *gateway) serveDeltas() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deltas = true
}

// spoilNextDelta makes change spoil the next delta served.
func (g *gateway) spoilNextDelta(change func(*hostproto.NodeSpec)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.spoil = change
}

// entryGenerations gives each entry of next its generation: its previous
// one when prev has it unchanged, else gen.
func entryGenerations(prev, next []hostproto.InstanceSpec, gen int64) []hostproto.InstanceSpec {
	before := make(map[string]hostproto.InstanceSpec, len(prev))
	for _, is := range prev {
		before[is.ID] = is
	}
	out := make([]hostproto.InstanceSpec, len(next))
	for i, is := range next {
		is.Generation = gen
		if old, ok := before[is.ID]; ok {
			is.Generation = old.Generation
			if !reflect.DeepEqual(old, is) {
				is.Generation = gen
			}
		}
		out[i] = is
	}
	return out
}

// delta is spec as a delta to generation after, when the gateway serves
// deltas and after > 0.
func (g *gateway) delta(spec hostproto.NodeSpec, after int64) hostproto.NodeSpec {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.deltas || after == 0 {
		return spec
	}
	all := spec.Instances
	spec.After, spec.Instances = after, nil
	for _, is := range all {
		if is.Generation > after {
			spec.Instances = append(spec.Instances, is)
		} else {
			spec.Unchanged = append(spec.Unchanged, hostproto.EntryRef{ID: is.ID, Generation: is.Generation})
		}
	}
	if g.spoil != nil {
		g.spoil(&spec)
		g.spoil = nil
	}
	return spec
}
