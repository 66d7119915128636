package e2e

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/better-compute/vps/drivers/cloud/cloudtest"
	"github.com/better-compute/vps/internal/testenv"
)

// owned are the metrics each process exports, as docs/operations.md lists
// them.
var owned = map[string][]string{
	"serve": {
		"bc_graphql_operations_total", "bc_graphql_operation_duration_seconds",
		"bc_sandbox_warm_target", "bc_sandbox_warm_free", "bc_sandbox_warm_ready",
	},
	"reconcile": {
		"bc_work_stream_length", "bc_work_stream_lag", "bc_work_stream_pending", "bc_work_stream_oldest_pending_seconds",
		"bc_work_dead_letters", "bc_reconcile_total", "bc_reconcile_duration_seconds",
		"bc_periodic_runs_total", "bc_periodic_last_run_timestamp_seconds", "bc_periodic_last_run_duration_seconds",
		"bc_instances", "bc_host_up", "bc_host_last_report_age_seconds",
		"bc_provider_calls_total", "bc_provider_rate_limit", "bc_provider_rate_limit_remaining",
		"bc_provider_rate_limit_reset_timestamp_seconds",
	},
	"host": {
		"bc_hostd_converge_step_seconds", "bc_hostd_runtime_errors_total", "bc_hostd_reports_total",
		"bc_hostd_last_report_timestamp_seconds",
	},
}

// TestObservable runs serve, reconcile and host briefly, with an instance
// on the host, a warm pool and an instance in a Hetzner pool whose first
// create fails: each process answers /healthz and /readyz, exports the
// metrics it owns with what happened in them, and the reconciler's log
// names objects by API IDs only.
func TestObservable(t *testing.T) {
	t.Parallel()
	cl := hetznerCloud(t)
	reconcileMetrics, hostMetrics := freeAddr(t), freeAddr(t)
	c := start(t, options{
		hosts: 1, hostVcpus: 8, reconcilers: 1,
		reconcileArgs: append([]string{"--metrics-listen", reconcileMetrics, "--log-level", "DEBUG"}, providerArgs...),
		hostArgs:      []string{"--metrics-listen", hostMetrics},
	})
	urls := map[string]string{"serve": c.url, "reconcile": "http://" + reconcileMetrics, "host": "http://" + hostMetrics}
	hostPool := c.pool
	c.create("on-host", "RUNNING")
	c.sandboxTemplate("warm", map[string]any{"warmCount": 1})
	account := c.providerPool(cl, "cloud", cl.credentials)
	c.cloudCatalog(cl)
	cl.faults.Inject(cloudtest.Fault{Match: "POST", Count: 1, Status: 503, Body: `{}`})
	c.create("in-cloud", "RUNNING")
	c.settle(30 * time.Second)

	for name, url := range urls {
		testenv.Eventually(t, 10*time.Second, name+" ready", func() bool { return status(url+"/readyz") == 200 })
		if code := status(url + "/healthz"); code != 200 {
			t.Errorf("%s /healthz: %d", name, code)
		}
	}
	// The counters and the scrape-time gauges say what happened.
	want := []struct {
		process, name string
		labels        map[string]string
		atLeast       float64
	}{
		{"reconcile", "bc_reconcile_total", map[string]string{"kind": "vps.instances", "outcome": "ok"}, 1},
		{"reconcile", "bc_reconcile_total", map[string]string{"kind": "vps.instances", "outcome": "retry"}, 1},
		{"reconcile", "bc_instances", map[string]string{"pool": hostPool, "state": "RUNNING"}, 1},
		{"reconcile", "bc_instances", map[string]string{"pool": c.pool, "state": "RUNNING"}, 1},
		{"reconcile", "bc_host_up", map[string]string{"name": "hv-0"}, 1},
		{"reconcile", "bc_periodic_last_run_timestamp_seconds", map[string]string{"job": "vps.rescan"}, float64(time.Now().Add(-time.Minute).Unix())},
		{"reconcile", "bc_provider_calls_total", map[string]string{"account": account, "provider": "hetzner", "outcome": "ok"}, 1},
		{"reconcile", "bc_provider_calls_total", map[string]string{"account": account, "provider": "hetzner", "outcome": "retryable"}, 1},
		{"reconcile", "bc_provider_rate_limit_remaining", map[string]string{"account": account, "provider": "hetzner"}, 1},
		{"host", "bc_hostd_reports_total", map[string]string{"outcome": "ok"}, 1},
		{"serve", "bc_sandbox_warm_target", map[string]string{"template": ""}, 1},
	}
	testenv.Eventually(t, 20*time.Second, "every metric on its owner", func() bool {
		families := map[string]map[string]*dto.MetricFamily{}
		for name, url := range urls {
			families[name] = scrape(t, url)
		}
		for process, names := range owned {
			for _, name := range names {
				if families[process][name] == nil {
					t.Logf("%s does not export %s yet", process, name)
					return false
				}
			}
		}
		for _, w := range want {
			if v, ok := sample(families[w.process][w.name], w.labels); !ok || v < w.atLeast {
				t.Logf("%s: %s%v = %v (found %v), want at least %v; it has %v", w.process, w.name, w.labels, v, ok, w.atLeast, families[w.process][w.name].GetMetric())
				return false
			}
		}
		return families["host"]["bc_hostd_converge_step_seconds"].GetMetric()[0].GetHistogram().GetSampleCount() > 0
	})

	// docs/operations.md lists every metric each process exports.
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, url := range urls {
		for metric := range scrape(t, url) {
			if strings.HasPrefix(metric, "bc_") && !strings.Contains(string(doc), "`"+metric) {
				t.Errorf("docs/operations.md does not list %s, which %s exports", metric, name)
			}
		}
	}

	// Every line of the reconciler's log, DEBUG ones included, names
	// objects by their API IDs.
	log, err := os.ReadFile(c.reconcs[0].log)
	if err != nil {
		t.Fatal(err)
	}
	rawUUID := regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	for _, line := range strings.Split(string(log), "\n") {
		if rawUUID.MatchString(line) {
			t.Errorf("reconciler log line with a raw UUID: %s", line)
		}
	}
	if !regexp.MustCompile(`"key":"ins_`).Match(log) {
		t.Errorf("no reconciler log line names the retried instance by its ID:\n%s", log)
	}
}

// TestReadiness: /readyz says when a process cannot do its work — the
// host daemon when its reports are not accepted, the reconciler when
// Redis is gone — while /healthz still answers; the reconciler's metrics
// show the silent host down.
func TestReadiness(t *testing.T) {
	t.Parallel()
	reconcileMetrics, hostMetrics := freeAddr(t), freeAddr(t)
	c := start(t, options{
		hosts: 1, hostVcpus: 2, reconcilers: 1,
		reconcileArgs: []string{"--metrics-listen", reconcileMetrics},
		hostArgs:      []string{"--metrics-listen", hostMetrics},
	})
	host, reconcile := "http://"+hostMetrics, "http://"+reconcileMetrics
	for _, url := range []string{host, reconcile} {
		testenv.Eventually(t, 10*time.Second, url+" ready", func() bool { return status(url+"/readyz") == 200 })
	}

	c.server.stop()
	testenv.Eventually(t, 10*time.Second, "the host not ready without its server", func() bool { return status(host+"/readyz") == 503 })
	testenv.Eventually(t, 10*time.Second, "the reconciler sees the host silent", func() bool {
		families := scrape(t, reconcile)
		up, _ := sample(families["bc_host_up"], map[string]string{"name": "hv-0"})
		age, _ := sample(families["bc_host_last_report_age_seconds"], map[string]string{"name": "hv-0"})
		return up == 0 && age >= silentAfter.Seconds()
	})
	c.redis.stop()
	testenv.Eventually(t, 10*time.Second, "the reconciler not ready without Redis", func() bool { return status(reconcile+"/readyz") == 503 })
	for _, url := range []string{host, reconcile} {
		if code := status(url + "/healthz"); code != 200 {
			t.Errorf("%s/healthz: %d, want 200 while the process runs", url, code)
		}
	}
}

// TestHostRuntimeErrorsCounted: a host whose runtime fails every start
// counts each failure by operation, and the steps it took.
func TestHostRuntimeErrorsCounted(t *testing.T) {
	t.Parallel()
	hostMetrics := freeAddr(t)
	c := start(t, options{
		hosts: 1, hostVcpus: 2, reconcilers: 1,
		hostArgs: []string{"--metrics-listen", hostMetrics, "--fake-fail-starts", "no disk"},
	})
	// Its metrics are served once the process has bound the address.
	testenv.Eventually(t, 10*time.Second, "the host's metrics served", func() bool { return status("http://"+hostMetrics+"/healthz") == 200 })
	c.create("doomed", "RUNNING")
	testenv.Eventually(t, 20*time.Second, "the failed start counted", func() bool {
		families := scrape(t, "http://"+hostMetrics)
		starts, _ := sample(families["bc_hostd_runtime_errors_total"], map[string]string{"op": "start"})
		return starts >= 1 && families["bc_hostd_converge_step_seconds"].GetMetric()[0].GetHistogram().GetSampleCount() >= 1
	})
}

// status returns the status code of GET url, 0 when it fails.
func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// scrape reads and parses the metrics at url.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the metrics of %s: %v", url, err)
	}
	return families
}

// sample returns the value of the counter or gauge of f whose labels
// include labels; an empty label value matches any.
func sample(f *dto.MetricFamily, labels map[string]string) (float64, bool) {
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got, ok := have[k]; !ok || v != "" && got != v {
				continue next
			}
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}
