package graph_test

import (
	"slices"
	"testing"
)

// TestDoctor: operators read the doctor's findings — a hosted pool without
// an IP range is an ERROR naming the pool, with a message and a remedy —
// and members are refused. Pools name their runtime: the first BC_RUNTIMES
// lists by default, another listed one when asked, an unlisted one refused
// and none for a pool of another class.
func TestDoctor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pool := e.pool("bare", "vps-host", nil)
	var out struct {
		Doctor struct {
			Findings []struct {
				Code, Level, Message, Remedy string
				Objects                      []string
			}
		}
	}
	e.must(e.operator, `{ doctor { findings { code level objects message remedy } } }`, nil, &out)
	found := false
	for _, f := range out.Doctor.Findings {
		if f.Code == "vps.pools.ipam" && f.Level == "ERROR" && slices.Equal(f.Objects, []string{pool}) && f.Message != "" && f.Remedy != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no vps.pools.ipam ERROR naming %s: %+v", pool, out.Doctor.Findings)
	}

	_, member := e.tenant("acme")
	if code := e.do(member, `{ doctor { findings { code } } }`, nil).code(); code != "FORBIDDEN" {
		t.Errorf("a member asking the doctor: %q, want FORBIDDEN", code)
	}

	t.Run("pools name their runtime", func(t *testing.T) {
		runtime := func(query string) any {
			t.Helper()
			var out struct {
				CreatePool struct{ Pool struct{ Runtime any } }
			}
			e.must(e.operator, query, nil, &out)
			return out.CreatePool.Pool.Runtime
		}
		if rt := runtime(`mutation { createPool(input: {name: "kvm", class: "vps-host"}) { pool { runtime } } }`); rt != "libvirt-kvm" {
			t.Errorf("default runtime %v, want libvirt-kvm", rt)
		}
		if rt := runtime(`mutation { createPool(input: {name: "sim", class: "vps-host", runtime: "fake"}) { pool { runtime } } }`); rt != "fake" {
			t.Errorf("runtime %v, want fake", rt)
		}
		r := e.do(e.operator, `mutation { createPool(input: {name: "odd", class: "vps-host", runtime: "kvm-libvirt"}) { pool { id } } }`, nil)
		if r.code() != "INVALID_INPUT" || e.count("pools", "name = 'odd'") != 0 {
			t.Errorf("an unlisted runtime: %+v, want INVALID_INPUT and no pool", r.Errors)
		}
		r = e.do(e.operator, `mutation { createPool(input: {name: "cloud", class: "other", runtime: "fake"}) { pool { id } } }`, nil)
		if r.code() != "INVALID_INPUT" || e.count("pools", "name = 'cloud'") != 0 {
			t.Errorf("a runtime for a pool without hosts: %+v, want INVALID_INPUT and no pool", r.Errors)
		}
	})
}
