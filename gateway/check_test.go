package gateway_test

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
)

// TestReportChecks: a report with a number out of range, a state outside
// the protocol's set or a string the database cannot store is 400 naming
// the field, and nothing of it is stored.
func TestReportChecks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.place("running")
	id := ids.Encode(ids.Instance, e.instance)
	cur := strconv.Itoa(hostproto.Version)
	cases := []struct {
		name  string
		body  string
		field string
	}{
		{"negative memory", `{"protocol":` + cur + `,"generation":1,"inventory":{"vcpus":4,"memoryMb":-1,"diskGb":10}}`, "inventory.memoryMb"},
		{"negative vCPUs", `{"protocol":` + cur + `,"generation":1,"inventory":{"vcpus":-4,"memoryMb":1,"diskGb":10}}`, "inventory.vcpus"},
		{"negative disk", `{"protocol":` + cur + `,"generation":1,"inventory":{"vcpus":4,"memoryMb":1,"diskGb":-10}}`, "inventory.diskGb"},
		{"vCPUs past 32 bits", `{"protocol":` + cur + `,"generation":1,"inventory":{"vcpus":4294967297,"memoryMb":1,"diskGb":10}}`, "inventory.vcpus"},
		{"memory past 64 bits", `{"protocol":` + cur + `,"generation":1,"inventory":{"vcpus":4,"memoryMb":99999999999999999999,"diskGb":10}}`, "inventory.memoryMb"},
		{"negative generation", `{"protocol":` + cur + `,"generation":-1}`, "generation"},
		{"unknown state", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"exploded"}]}`, "instances[0].state"},
		{"NUL in a reason", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"failed","reason":"bad\u0000"}]}`, "instances[0].reason"},
		{"negative CPU time", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"running","stats":{"cpuTimeNs":-1,"memoryBytes":1}}]}`, "instances[0].stats.cpuTimeNs"},
		{"negative memory use", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"running","stats":{"cpuTimeNs":1,"memoryBytes":-1}}]}`, "instances[0].stats.memoryBytes"},
		{"memory use past a host's", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"paused","stats":{"cpuTimeNs":1,"memoryBytes":1125899906842625}}]}`, "instances[0].stats.memoryBytes"},
		{"CPU time past 64 bits", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"running","stats":{"cpuTimeNs":18446744073709551616,"memoryBytes":1}}]}`, "instances.stats.cpuTimeNs"},
		{"stats of a stopped instance", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"stopped","stats":{"cpuTimeNs":1,"memoryBytes":1}}]}`, "instances[0].stats"},
		{"unknown command state", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"done"}]}`, "commands[0].state"},
		{"progress over 100", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"running","progress":101}]}`, "commands[0].progress"},
		{"negative progress", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"running","progress":-1}]}`, "commands[0].progress"},
		{"a command reported twice", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"running"},{"id":"cmd_x","state":"failed"}]}`, "commands[1].id"},
		{"a long command error", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"failed","error":"` + strings.Repeat("e", 4097) + `"}]}`, "commands[0].error"},
		{"NUL in a command error", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"failed","error":"a\u0000"}]}`, "commands[0].error"},
		{"a long result", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"succeeded","result":"` + strings.Repeat("r", 64<<10) + `"}]}`, "commands[0].result"},
		{"NUL in a result", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"succeeded","result":{"sha256":"a\u0000"}}]}`, "commands[0].result"},
		{"NUL in a result's key", `{"protocol":` + cur + `,"generation":1,"commands":[{"id":"cmd_x","state":"succeeded","result":{"a\u0000":1}}]}`, "commands[0].result"},
		{"a status ahead of its report", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"running","generation":2}]}`, "instances[0].generation"},
		{"a negative status generation", `{"protocol":` + cur + `,"generation":1,"instances":[{"id":"` + id + `","state":"running","generation":-1}]}`, "instances[0].generation"},
		{"NUL in a GPU", `{"protocol":` + cur + `,"generation":1,"inventory":{"vcpus":4,"memoryMb":1,"diskGb":10,"gpus":[{"address":"0000:65:00.0","vendor":"N\u0000","model":"L40S"}]}}`, "inventory.gpus[0].vendor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.post(c.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.HasPrefix(string(b), c.field+": ") {
				t.Fatalf("%d %q, want 400 naming %s", resp.StatusCode, b, c.field)
			}
		})
	}
	var capacities, observed int
	e.db.QueryRow(context.Background(), "SELECT count(*) FROM host_capacity").Scan(&capacities)
	e.db.QueryRow(context.Background(), "SELECT count(*) FROM instances WHERE observed_state IS NOT NULL").Scan(&observed)
	if capacities != 0 || observed != 0 {
		t.Fatalf("stored from refused reports: %d capacities, %d observations", capacities, observed)
	}
}

// TestReportGeneration: a report may not claim a generation the host was
// never sent (409, nothing stored), and one older than the host already
// reported counts only as a heartbeat: it neither lowers the stored
// generation nor records what it saw.
func TestReportGeneration(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := e.place("running")
	id := ids.Encode(ids.Instance, e.instance)
	var reported int64
	var observed *string
	read := func() {
		e.db.QueryRow(context.Background(), "SELECT reported_generation FROM hosts WHERE id = $1", e.host).Scan(&reported)
		e.db.QueryRow(context.Background(), "SELECT observed_state FROM instances WHERE id = $1", e.instance).Scan(&observed)
	}

	resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: gen + 5,
		Instances: []hostproto.InstanceStatus{{ID: id, State: hostproto.StateRunning}}})
	if resp.StatusCode != 409 {
		t.Fatalf("a report ahead of the spec: %d, want 409", resp.StatusCode)
	}
	if read(); reported != 0 || observed != nil {
		t.Fatalf("after a report ahead of the spec: reported generation %d, observed %v", reported, observed)
	}

	if resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: gen,
		Instances: []hostproto.InstanceStatus{{ID: id, State: hostproto.StateRunning}}}); resp.StatusCode != 204 {
		t.Fatalf("a current report: %d", resp.StatusCode)
	}
	var seen1 any
	e.db.QueryRow(context.Background(), "SELECT last_seen_at FROM hosts WHERE id = $1", e.host).Scan(&seen1)

	// A late report of the same instance at an older generation that still
	// covers its entry: it must not overwrite what the newer one said.
	e.exec("UPDATE instances SET spec_generation = $1 WHERE id = $2", gen-1, e.instance)
	if resp := e.request("POST", hostproto.ReportPath, e.credential, hostproto.Report{Protocol: hostproto.Version, Generation: gen - 1,
		Instances: []hostproto.InstanceStatus{{ID: id, State: hostproto.StateStopped}}}); resp.StatusCode != 204 {
		t.Fatalf("an older report: %d, want 204 (a heartbeat)", resp.StatusCode)
	}
	if read(); reported != gen || observed == nil || *observed != "running" {
		t.Fatalf("after an older report: reported generation %d (want %d), observed %v (want running)", reported, gen, *observed)
	}
	var seen2 any
	e.db.QueryRow(context.Background(), "SELECT last_seen_at FROM hosts WHERE id = $1", e.host).Scan(&seen2)
	if seen1 == seen2 {
		t.Fatal("an older report did not count as a heartbeat")
	}
}
