package gateway_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
)

// another makes a second instance in the env's pool, not yet placed.
func (e *env) another(name string) uuid.UUID {
	e.t.Helper()
	ctx := iam.WithPrincipal(context.Background(), control.System)
	inst, err := e.svc.CreateInstance(ctx, control.CreateInstanceInput{TenantID: e.tenant, PoolID: e.pool, FlavorID: e.flavor, ImageID: e.image,
		Name: name, SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl k"}, UserData: []byte("#cloud-config\n# " + name + "\n")})
	if err != nil {
		e.t.Fatal(err)
	}
	return inst.ID
}

// unplace takes instance id out of the host's spec, as the reconciler does
// when it deletes it, and returns the spec's generation.
func (e *env) unplace(id uuid.UUID) int64 {
	e.t.Helper()
	var gen int64
	if err := e.db.QueryRow(context.Background(), "UPDATE hosts SET spec_generation = spec_generation + 1 WHERE id = $1 RETURNING spec_generation", e.host).Scan(&gen); err != nil {
		e.t.Fatal(err)
	}
	e.exec(`UPDATE instances SET spec_power = NULL, spec_generation = $1 WHERE id = $2`, gen, id)
	e.rdb.Publish(context.Background(), e.prefix+events.HostChannel(e.host), "")
	return gen
}

// specAt long-polls the spec after a generation as a daemon of version
// would, with no wait, and returns the body as it came.
func (e *env) specAt(version int, after int64) (hostproto.NodeSpec, string, int) {
	e.t.Helper()
	resp := e.requestAt(version, "GET", hostproto.SpecPathOf(version)+"?wait=0&after="+strconv.FormatInt(after, 10), e.credential, nil)
	raw := body(e.t, resp.Body)
	var spec hostproto.NodeSpec
	if resp.StatusCode == 200 {
		if err := json.Unmarshal([]byte(raw), &spec); err != nil {
			e.t.Fatal(err)
		}
	}
	return spec, raw, resp.StatusCode
}

// TestSpecDelta: a version 5 host polling after the generation it holds
// gets in full only the entries that changed since, the others by ID and
// entry generation; a removed instance is simply not listed. The gateway
// opens no sealed data of an unchanged entry (a corrupt one spoils the
// whole spec, not the delta). after=0, and version 4, get the whole spec.
func TestSpecDelta(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.instance, e.another("api")
	idA, idB := ids.Encode(ids.Instance, a), ids.Encode(ids.Instance, b)
	genA := e.place("running")
	genB := e.placeOn(b, "running")

	t.Run("only the changed entry in full", func(t *testing.T) {
		spec, raw, code := e.specAt(hostproto.Version, genA)
		if code != 200 || spec.Generation != genB || spec.After != genA {
			t.Fatalf("%d %s", code, raw)
		}
		if len(spec.Instances) != 1 || spec.Instances[0].ID != idB || spec.Instances[0].Generation != genB ||
			spec.Instances[0].Name != "api" || spec.Instances[0].UserData != "#cloud-config\n# api\n" || spec.Instances[0].Image.URL == "" {
			t.Fatalf("changed entries %+v, want %s's whole entry at generation %d", spec.Instances, idB, genB)
		}
		if want := []hostproto.EntryRef{{ID: idA, Generation: genA}}; !reflect.DeepEqual(spec.Unchanged, want) {
			t.Fatalf("unchanged %+v, want %+v", spec.Unchanged, want)
		}
	})
	t.Run("after=0 is the whole spec", func(t *testing.T) {
		spec, raw, code := e.specAt(hostproto.Version, 0)
		if code != 200 || spec.After != 0 || len(spec.Unchanged) != 0 || len(spec.Instances) != 2 {
			t.Fatalf("%d %s", code, raw)
		}
		for _, is := range spec.Instances {
			if want := map[string]int64{idA: genA, idB: genB}[is.ID]; is.Generation != want || is.Image.URL == "" {
				t.Fatalf("entry %+v, want generation %d, whole", is, want)
			}
		}
	})
	t.Run("version 4 is sent the whole spec, without entry generations", func(t *testing.T) {
		spec, raw, code := e.specAt(4, genA)
		if code != 200 || spec.Protocol != 4 || len(spec.Instances) != 2 || spec.After != 0 || len(spec.Unchanged) != 0 {
			t.Fatalf("%d %s", code, raw)
		}
		for _, is := range spec.Instances {
			if is.Generation != 0 || is.Image.URL == "" || is.UserData == "" {
				t.Fatalf("version 4 entry %+v", is)
			}
		}
	})
	var genGone int64
	t.Run("a removed instance is not listed", func(t *testing.T) {
		genGone = e.unplace(b)
		spec, raw, code := e.specAt(hostproto.Version, genB)
		if code != 200 || spec.Generation != genGone || len(spec.Instances) != 0 ||
			!reflect.DeepEqual(spec.Unchanged, []hostproto.EntryRef{{ID: idA, Generation: genA}}) {
			t.Fatalf("%d %s", code, raw)
		}
	})
	t.Run("an unchanged entry's sealed data is not opened", func(t *testing.T) {
		e.exec(`UPDATE instances SET user_data_sealed = '\x00'::bytea WHERE id = $1`, a)
		if _, raw, code := e.specAt(hostproto.Version, 0); code != 500 {
			t.Fatalf("the whole spec with a corrupt user data: %d %s, want 500", code, raw)
		}
		spec, raw, code := e.specAt(hostproto.Version, genB)
		if code != 200 || len(spec.Instances) != 0 || len(spec.Unchanged) != 1 {
			t.Fatalf("the delta: %d %s", code, raw)
		}
	})
}

// TestPartialReport: an instance missing from a partial report is not
// absent, one it lists as absent is, and one missing from a whole report
// is; a partial report's statuses are recorded like a whole one's, but its
// stats are not handed over; a late partial report (an older generation)
// says nothing of instances, like a late whole one.
func TestPartialReport(t *testing.T) {
	t.Parallel()
	var got sink
	e := setup(t, func(c *gateway.Config) { c.Stats = &got })
	a, b := e.instance, e.another("api")
	idA, idB := ids.Encode(ids.Instance, a), ids.Encode(ids.Instance, b)
	e.place("running")
	gen := e.placeOn(b, "running")
	observed := func(id uuid.UUID) string {
		t.Helper()
		var s *string
		if err := e.db.QueryRow(context.Background(), "SELECT observed_state FROM instances WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s == nil {
			return ""
		}
		return *s
	}
	post := func(r hostproto.Report) {
		t.Helper()
		r.Protocol = hostproto.Version
		if resp := e.request("POST", hostproto.ReportPath, e.credential, r); resp.StatusCode != 204 {
			t.Fatalf("report %+v: %d %s", r, resp.StatusCode, body(t, resp.Body))
		}
	}
	stats := &hostproto.Stats{CPUTimeNs: 1, MemoryBytes: 1}
	running := func(id string) hostproto.InstanceStatus {
		return hostproto.InstanceStatus{ID: id, State: hostproto.StateRunning, Stats: stats}
	}
	both := []hostproto.InstanceStatus{running(idA), running(idB)}

	post(hostproto.Report{Generation: gen, Instances: both})
	if observed(a) != "running" || observed(b) != "running" || len(got.all()) != 1 {
		t.Fatalf("after a whole report: %s, %s, %d stats handed over", observed(a), observed(b), len(got.all()))
	}
	t.Run("missing from a partial report is not absent", func(t *testing.T) {
		post(hostproto.Report{Generation: gen, Partial: true, Instances: []hostproto.InstanceStatus{{ID: idA, State: hostproto.StateStopped}}})
		if observed(a) != "stopped" || observed(b) != "running" {
			t.Fatalf("after a partial report of a stopped: %s, %s; want stopped, running", observed(a), observed(b))
		}
	})
	t.Run("a partial report's stats are handed over, its own instances' only", func(t *testing.T) {
		before := len(got.all())
		other := ids.Encode(ids.Instance, e.another("elsewhere"))
		post(hostproto.Report{Generation: gen, Partial: true, Instances: []hostproto.InstanceStatus{{ID: idA, State: hostproto.StateRunning}},
			Stats: map[string]hostproto.Stats{idA: *stats, idB: *stats, other: *stats}})
		all := got.all()
		if observed(a) != "running" || len(all) != before+1 {
			t.Fatalf("after a partial report with stats: %s, %d stats handed over, want 1", observed(a), len(all)-before)
		}
		if s := all[len(all)-1].Instances; len(s) != 2 || s[a] != *stats || s[b] != *stats {
			t.Fatalf("stats handed over %v, want a's and b's", s)
		}
	})
	t.Run("version 5 reads no stats in a partial report", func(t *testing.T) {
		before := len(got.all())
		r := hostproto.Report{Protocol: 5, Generation: gen, Partial: true, Instances: []hostproto.InstanceStatus{running(idA)}}
		if resp := e.requestAt(5, "POST", hostproto.ReportPathOf(5), e.credential, r); resp.StatusCode != 204 {
			t.Fatalf("version 5 partial report with stats: %d %s", resp.StatusCode, body(t, resp.Body))
		}
		if n := len(got.all()) - before; n != 0 {
			t.Fatalf("%d stats handed over from a version 5 partial report", n)
		}
	})
	t.Run("absent in a partial report is absent", func(t *testing.T) {
		post(hostproto.Report{Generation: gen, Partial: true, Absent: []string{idB}})
		if observed(a) != "running" || observed(b) != "absent" {
			t.Fatalf("after a partial report of b absent: %s, %s; want running, absent", observed(a), observed(b))
		}
	})
	t.Run("missing from a whole report is absent", func(t *testing.T) {
		post(hostproto.Report{Generation: gen, Instances: both})
		post(hostproto.Report{Generation: gen, Instances: []hostproto.InstanceStatus{running(idA)}})
		if observed(a) != "running" || observed(b) != "absent" {
			t.Fatalf("after a whole report without b: %s, %s; want running, absent", observed(a), observed(b))
		}
	})
	var newer int64
	t.Run("a late partial report says nothing of instances", func(t *testing.T) {
		post(hostproto.Report{Generation: gen, Instances: both})
		newer = e.placeOn(a, "running") // a's entry changes; b's does not
		post(hostproto.Report{Generation: newer, Instances: []hostproto.InstanceStatus{
			{ID: idA, State: hostproto.StateRunning, Generation: newer}, {ID: idB, State: hostproto.StateRunning, Generation: gen}}})
		post(hostproto.Report{Generation: gen, Partial: true, Instances: []hostproto.InstanceStatus{{ID: idB, State: hostproto.StateStopped}}, Absent: []string{idA}})
		if observed(a) != "running" || observed(b) != "running" {
			t.Fatalf("after a late partial report: %s, %s; want running, running", observed(a), observed(b))
		}
		post(hostproto.Report{Generation: newer, Partial: true, Instances: []hostproto.InstanceStatus{{ID: idB, State: hostproto.StateStopped, Generation: gen}}})
		if observed(b) != "stopped" {
			t.Fatalf("after a current partial report: %s, want stopped", observed(b))
		}
	})
	t.Run("only a partial report has an absent list", func(t *testing.T) {
		r := hostproto.Report{Protocol: hostproto.Version, Generation: gen, Instances: both, Absent: []string{idB}}
		if resp := e.request("POST", hostproto.ReportPath, e.credential, r); resp.StatusCode != 400 {
			t.Fatalf("a whole report with an absent list: %d", resp.StatusCode)
		}
		r.Partial = true
		if resp := e.request("POST", hostproto.ReportPath, e.credential, r); resp.StatusCode != 400 {
			t.Fatalf("a partial report naming b both reported and absent: %d", resp.StatusCode)
		}
	})
	t.Run("stats where the report's kind has none", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			report hostproto.Report
			field  string
		}{
			{"a whole report with stats outside its statuses", hostproto.Report{Generation: gen, Instances: both, Stats: map[string]hostproto.Stats{idA: *stats}}, "stats"},
			{"a partial report with stats in a status", hostproto.Report{Generation: gen, Partial: true, Instances: []hostproto.InstanceStatus{running(idA)}}, "instances[0].stats"},
			{"negative stats", hostproto.Report{Generation: gen, Partial: true, Stats: map[string]hostproto.Stats{idA: {CPUTimeNs: -1}}}, "stats." + idA + ".cpuTimeNs"},
		} {
			c.report.Protocol = hostproto.Version
			resp := e.request("POST", hostproto.ReportPath, e.credential, c.report)
			if msg := body(t, resp.Body); resp.StatusCode != 400 || !strings.HasPrefix(msg, c.field+":") {
				t.Errorf("%s: %d %q, want 400 naming %s", c.name, resp.StatusCode, msg, c.field)
			}
		}
	})
	t.Run("version 4 reads partial as whole", func(t *testing.T) {
		post(hostproto.Report{Generation: newer, Instances: both})
		r := hostproto.Report{Protocol: 4, Generation: newer, Partial: true, Instances: []hostproto.InstanceStatus{running(idA)}}
		if resp := e.requestAt(4, "POST", hostproto.ReportPathOf(4), e.credential, r); resp.StatusCode != 204 {
			t.Fatalf("version 4 report: %d", resp.StatusCode)
		}
		if observed(b) != "absent" {
			t.Fatalf("b missing from a version 4 report is %s, want absent", observed(b))
		}
	})
}
