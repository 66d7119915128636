package gateway_test

import (
	"slices"
	"testing"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// TestIdleHeartbeatCost: a heartbeat of a host where nothing changed reads
// and writes only the host's row and its instances' IDs (for the stats),
// whatever the host holds; the whole one every WholeReportEvery
// heartbeats also records each status, absence and certification.
func TestIdleHeartbeatCost(t *testing.T) {
	t.Parallel()
	var ran testenv.Statements
	e := setup(t, func(c *gateway.Config) { c.DB, c.Stats = testenv.Traced(t, c.DB, &ran), &sink{} })
	e.place("running")
	other := e.another("api")
	gen := e.placeOn(other, "running")
	a, b := ids.Encode(ids.Instance, e.instance), ids.Encode(ids.Instance, other)
	s := hostproto.Stats{CPUTimeNs: 1, MemoryBytes: 1}
	whole := hostproto.Report{Protocol: hostproto.Version, Generation: gen, Inventory: &hostproto.Inventory{Vcpus: 8, MemoryMB: 8192, DiskGB: 100},
		Instances: []hostproto.InstanceStatus{{ID: a, State: hostproto.StateRunning, Stats: &s}, {ID: b, State: hostproto.StateRunning, Stats: &s}}}
	partial := hostproto.Report{Protocol: hostproto.Version, Generation: gen, Inventory: whole.Inventory, Partial: true,
		Instances: []hostproto.InstanceStatus{}, Stats: map[string]hostproto.Stats{a: s, b: s}}
	post := func(r hostproto.Report) []string {
		t.Helper()
		ran.Take()
		if resp := e.request("POST", hostproto.ReportPath, e.credential, r); resp.StatusCode != 204 {
			t.Fatalf("report: %d %s", resp.StatusCode, body(t, resp.Body))
		}
		return ran.Take()
	}
	post(whole) // the first: capacity adopted, statuses and certification recorded
	post(partial)

	for _, c := range []struct {
		name   string
		report hostproto.Report
		want   []string
	}{
		{"partial", partial, []string{"HostByCredential", "begin", "HostReportState", "savepoint", "HostInstances", "release", "RecordReport", "commit"}},
		{"whole", whole, []string{"HostByCredential", "begin", "HostReportState", "savepoint", "ObserveReported", "ObserveAbsent", "HostInstances", "release",
			"savepoint", "SetHostCertification", "release", "RecordReport", "commit"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := post(c.report); !slices.Equal(got, c.want) {
				t.Fatalf("an idle %s heartbeat ran %d statements %v, want %d: %v", c.name, len(got), got, len(c.want), c.want)
			}
		})
	}
}
