package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
)

// fleetHosts is how many simulated hosts BenchmarkFleet runs.
const fleetHosts = 100

// fleetIdle is how long BenchmarkFleet watches serve while nothing changes.
const fleetIdle = 30 * time.Second

// BenchmarkFleet creates n instances at once (16 clients) on 100 simulated
// hosts and measures how long until all are RUNNING, the reconcile
// process's CPU time per instance and how many times it reconciled each;
// then serve's CPU while the hosts long-poll and report and nothing changes
// (fleetIdle); then the same for deleting them all, and that nothing is
// left held.
//
// With BC_BENCH_PROFILES=dir it writes CPU profiles of reconcile over the
// creates and the deletes, and of serve over the idle spell, to dir.
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{1000, 3000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				benchFleet(b, n, 1)
			}
		})
	}
}

// BenchmarkFleetReplicas is BenchmarkFleet at 1,000 instances with one
// reconcile process and with two, to show what the second adds; with
// -count 2 or more the two alternate. CPU figures are both processes'.
func BenchmarkFleetReplicas(b *testing.B) {
	for _, r := range []int{1, 2} {
		b.Run(fmt.Sprintf("reconcilers=%d", r), func(b *testing.B) {
			for range b.N {
				benchFleet(b, 1000, r)
			}
		})
	}
}

func benchFleet(b *testing.B, n, reconcilers int) {
	b.StopTimer()
	profiles := os.Getenv("BC_BENCH_PROFILES")
	metrics := make([]string, reconcilers)
	for i := range metrics {
		metrics[i] = "http://" + freeAddr(b)
	}
	// The hosts and the reconcilers keep a deployment's cadence (a report
	// every 5 s at the most, silent after 30 s; a rescan every 10 s, an
	// entry reclaimed after 30 s), not the tests' quicker one: a rescan
	// hands every instance not at rest to the reconcilers again, those
	// waiting for their host's report included, so at the tests' 1 s the
	// reconciles per instance grow with how long the fleet takes.
	silent := "BC_HOST_SILENT_AFTER=" + vps.DefaultHostSilentAfter.String()
	o := options{hosts: fleetHosts, reconcilers: reconcilers, hostVcpus: 1000, wideNet: true,
		hostArgs:     []string{"--heartbeat", hostd.DefaultHeartbeatInterval.String()},
		serverEnv:    []string{silent},
		reconcileEnv: []string{silent},
		reconcileArgsOf: func(i int) []string {
			return []string{"--metrics-listen", metrics[i][len("http://"):],
				"--rescan-interval", reconciler.DefaultRescanInterval.String(), "--claim-idle", reconciler.DefaultClaimIdle.String()}
		}}
	if profiles != "" {
		o.reconcileEnv = append(o.reconcileEnv, "BC_PPROF=true")
		o.serverEnv = append(o.serverEnv, "BC_PPROF=true")
	}
	c := start(b, o)
	c.waitHosts(fleetHosts)
	name := fmt.Sprintf("%d-r%d", n, reconcilers)
	w := watchRunning(b, c, n)
	m := c.reconcileMeter(b, metrics)
	stop := profileCPU(b, profiles, metrics[0], "reconcile-create-"+name)
	b.StartTimer()
	t0 := time.Now()
	ids := fleetDo(n, func(i int) string { return c.create(fmt.Sprintf("vm-%05d", i), "RUNNING") })
	select {
	case <-w.all:
	case <-time.After(15 * time.Minute):
		b.Fatalf("only %d of %d RUNNING after 15 min", w.n, n)
	}
	took := time.Since(t0)
	b.StopTimer()
	stop()
	cpu, reconciles := m.since(b)
	b.ReportMetric(took.Seconds(), "s-to-all-running")
	b.ReportMetric(ms(cpu)/float64(n), "reconciler-cpu-ms/instance")
	b.ReportMetric(float64(reconciles)/float64(n), "reconciles/instance")

	c.settle(time.Minute)
	stop = profileCPU(b, profiles, c.url, "serve-idle-"+name)
	serve0 := cpuTime(b, c.server)
	time.Sleep(fleetIdle) // the measurement's window
	idle := cpuTime(b, c.server) - serve0
	stop()
	b.ReportMetric(100*idle.Seconds()/fleetIdle.Seconds(), "serve-idle-%core")

	d := watchState(b, c, "DELETED", n)
	m = c.reconcileMeter(b, metrics)
	stop = profileCPU(b, profiles, metrics[0], "reconcile-delete-"+name)
	t0 = time.Now()
	fleetDo(n, func(i int) string { c.set("deleteInstance", ids[i]); return ids[i] })
	select {
	case <-d.all:
	case <-time.After(15 * time.Minute):
		b.Fatalf("only %d of %d DELETED after 15 min", d.n, n)
	}
	took = time.Since(t0)
	stop()
	cpu, reconciles = m.since(b)
	b.ReportMetric(took.Seconds(), "s-to-all-deleted")
	b.ReportMetric(ms(cpu)/float64(n), "reconciler-cpu-ms/delete")
	b.ReportMetric(float64(reconciles)/float64(n), "reconciles/delete")
	c.noLeaks()
}

// reconcileMeter is where the reconcile processes' CPU time and instance
// reconciles stood when it was taken.
type reconcileMeter struct {
	c          *cluster
	metrics    []string
	cpu        time.Duration
	reconciles int
}

func (c *cluster) reconcileMeter(b testing.TB, metrics []string) reconcileMeter {
	m := reconcileMeter{c: c, metrics: metrics}
	m.cpu, m.reconciles = m.read(b)
	return m
}

// since returns the CPU time and instance reconciles of all reconcile
// processes since m was taken.
func (m reconcileMeter) since(b testing.TB) (time.Duration, int) {
	cpu, n := m.read(b)
	return cpu - m.cpu, n - m.reconciles
}

func (m reconcileMeter) read(b testing.TB) (cpu time.Duration, reconciles int) {
	for i, p := range m.c.reconcs {
		cpu += cpuTime(b, p)
		reconciles += instanceReconciles(b, m.metrics[i])
	}
	return cpu, reconciles
}

// instanceReconciles sums bc_reconcile_total of the vps.instances kind, all
// outcomes, from the metrics at base.
func instanceReconciles(b testing.TB, base string) int {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatalf("read metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatalf("read metrics: %v", err)
	}
	n := 0
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, `bc_reconcile_total{kind="vps.instances",`) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
		if err != nil {
			b.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// fleetDo runs do for 0..n-1 on 16 clients and returns what each returned.
func fleetDo(n int, do func(i int) string) []string {
	out := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() { defer func() { <-sem }(); out[i] = do(i) })
	}
	wg.Wait()
	return out
}

// waitHosts waits until n hosts have reported in the last 10 seconds.
func (c *cluster) waitHosts(n int) {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for c.count("hosts WHERE last_seen_at > now() - interval '10 seconds'") < n {
		if time.Now().After(deadline) {
			c.t.Fatalf("fewer than %d hosts reported after a minute", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// profileCPU, when dir is set, takes CPU profiles of the process at base
// (its /debug/pprof/profile) in 5-second pieces until the returned stop is
// called, and merges them into dir/name.pprof.
func profileCPU(b testing.TB, dir, base, name string) (stop func()) {
	if dir == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []string)
	go func() {
		var parts []string
		for i := 0; ctx.Err() == nil; i++ {
			part := filepath.Join(b.TempDir(), fmt.Sprintf("%s-%d.pprof", name, i))
			if err := fetchTo(base+"/debug/pprof/profile?seconds=5", part); err != nil {
				b.Errorf("profile %s: %v", name, err)
				break
			}
			parts = append(parts, part)
		}
		done <- parts
	}()
	return func() {
		cancel()
		parts := <-done
		out := filepath.Join(dir, name+".pprof")
		args := append([]string{"tool", "pprof", "-proto", "-output", out}, parts...)
		if msg, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.Errorf("merge profiles of %s: %v: %s", name, err, msg)
		}
	}
}

// fetchTo writes what GET url answers to the file path.
func fetchTo(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
