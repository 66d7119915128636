package graph_test

import (
	"testing"
)

// TestIntRange: an Int outside 32 bits is INVALID_INPUT naming the field,
// given as a variable at any depth; it is never truncated (4294967297 is
// not 1).
func TestIntRange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tenant, _ := e.tenant("acme")
	var host struct {
		CreateHost struct{ Host struct{ ID string } }
	}
	e.must(e.operator, `mutation($p: ID!) { createHost(input: {poolId: $p, name: "hv-1"}) { host { id } } }`,
		map[string]any{"p": e.pool("fra1", "vps-host", nil)}, &host)
	const big = 4294967297 // 1<<32 + 1: 1 once truncated to 32 bits
	flavor := `mutation($v: Int!, $m: Int!, $d: Int!) { createFlavor(input: {name: "f", vcpus: $v, memoryMb: $m, diskGb: $d}) { flavor { vcpus memoryMb diskGb } } }`
	quota := `mutation($t: ID!, $i: Int, $v: Int, $m: Int, $g: Int) { setQuota(input: {tenantId: $t, instances: $i, vcpus: $v, memoryMb: $m, gpus: $g}) { tenant { id } } }`
	capacity := `mutation($h: ID!, $v: Int!, $m: Int!, $d: Int!) { setHostCapacity(input: {hostId: $h, vcpus: $v, memoryMb: $m, diskGb: $d}) { host { id } } }`
	h := host.CreateHost.Host.ID
	cases := []struct {
		name, query string
		vars        map[string]any
		field       string
	}{
		{"flavor vcpus", flavor, map[string]any{"v": big, "m": 1024, "d": 10}, "vcpus"},
		{"flavor memory", flavor, map[string]any{"v": 1, "m": big, "d": 10}, "memoryMb"},
		{"flavor disk", flavor, map[string]any{"v": 1, "m": 1024, "d": -big}, "diskGb"},
		{"quota instances", quota, map[string]any{"t": tenant, "i": big}, "instances"},
		{"quota vcpus", quota, map[string]any{"t": tenant, "v": big}, "vcpus"},
		{"quota memory", quota, map[string]any{"t": tenant, "m": 1 << 40}, "memoryMb"},
		{"quota gpus", quota, map[string]any{"t": tenant, "g": big}, "gpus"},
		{"host vcpus", capacity, map[string]any{"h": h, "v": big, "m": 1024, "d": 10}, "vcpus"},
		{"page size", `query($f: Int) { instances(first: $f) { nodes { id } } }`, map[string]any{"f": big}, "first"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(e.operator, c.query, c.vars)
			if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != c.field {
				t.Fatalf("errors = %+v, data = %s; want INVALID_INPUT on %s", r.Errors, r.Data, c.field)
			}
		})
	}
	if n := e.count("flavors", "true"); n != 0 {
		t.Errorf("%d flavors created", n)
	}
	if n := e.count("quotas", "true"); n != 0 {
		t.Errorf("%d quotas set", n)
	}
}
