package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// BenchmarkHeartbeat is the gateway's side of a host's heartbeat when
// nothing changed, at 100 running instances (a fleet of 10,000 on 100
// hosts): the report posted to the handler, as each host does every
// heartbeat interval, whole (every heartbeat before version 6, every
// WholeReportEvery after) and partial with stats (the others). cpu-µs/report is the process's CPU per report, the
// handler's share of serve's idle cost; Postgres's time is not in it.
func BenchmarkHeartbeat(b *testing.B) {
	e := setup(b, func(c *gateway.Config) { c.Stats = &sink{} })
	gen := e.place("running")
	statuses := []hostproto.InstanceStatus{{ID: ids.Encode(ids.Instance, e.instance), State: hostproto.StateRunning, Generation: gen}}
	for i := range 99 {
		id := e.another(fmt.Sprintf("vm-%d", i))
		statuses = append(statuses, hostproto.InstanceStatus{ID: ids.Encode(ids.Instance, id), State: hostproto.StateRunning, Generation: e.placeOn(id, "running")})
		gen = statuses[len(statuses)-1].Generation
	}
	for i := range statuses {
		statuses[i].Stats = &hostproto.Stats{CPUTimeNs: int64(i) * 1e9, MemoryBytes: 512 << 20}
	}
	whole := hostproto.Report{Protocol: hostproto.Version, Generation: gen, Instances: statuses,
		Inventory: &hostproto.Inventory{Vcpus: 1000, MemoryMB: 1 << 20, DiskGB: 1 << 14}}
	h := e.gw.Handler()
	encode := func(r hostproto.Report) []byte {
		body, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		return body
	}
	post := func(body []byte) {
		req := httptest.NewRequest("POST", hostproto.ReportPath, bytes.NewReader(body))
		req.Header.Set(hostproto.Header, strconv.Itoa(hostproto.Version))
		req.Header.Set("Authorization", "Bearer "+e.credential)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent {
			b.Fatalf("report: %d %s", w.Code, w.Body)
		}
	}
	post(encode(whole)) // every instance observed running: what follows changes nothing

	// A heartbeat between the whole ones, from version 6: nothing changed,
	// every instance's stats.
	partial := whole
	partial.Partial, partial.Instances, partial.Stats = true, nil, map[string]hostproto.Stats{}
	for _, st := range statuses {
		partial.Stats[st.ID] = *st.Stats
	}
	for _, c := range []struct {
		name   string
		report hostproto.Report
	}{{"whole", whole}, {"partial", partial}} {
		b.Run(c.name, func(b *testing.B) {
			body := encode(c.report)
			cpu0 := cpuTime(b)
			for b.Loop() {
				post(body)
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/report")
		})
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
