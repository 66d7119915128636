package graph_test

import (
	"strings"
	"testing"
)

const setSharedStore = `mutation($p: ID!, $s: Boolean!) { setPoolSharedSnapshotStore(input: {poolId: $p, sharedSnapshotStore: $s}) {
	pool { id sharedSnapshotStore } } }`

// TestPoolSharedSnapshotStore: a hosted pool says whether its hosts share
// one snapshot store: false unless createPool sets it, changed by
// setPoolSharedSnapshotStore (audited), shown on Pool. A pool without
// hosts cannot share one, members cannot set it, and a refused change
// writes nothing.
func TestPoolSharedSnapshotStore(t *testing.T) {
	t.Parallel()
	e := setup(t)
	shared := func(pool string) bool {
		t.Helper()
		var out struct {
			Node struct{ SharedSnapshotStore bool }
		}
		e.must(e.operator, `query($id: ID!) { node(id: $id) { ... on Pool { sharedSnapshotStore } } }`, map[string]any{"id": pool}, &out)
		return out.Node.SharedSnapshotStore
	}

	t.Run("created", func(t *testing.T) {
		plain := e.pool("plain", "vps-host", nil)
		if shared(plain) {
			t.Errorf("a pool shares a snapshot store by default")
		}
		var out struct {
			CreatePool struct {
				Pool struct{ SharedSnapshotStore bool }
			}
		}
		e.must(e.operator, `mutation { createPool(input: {name: "nfs", class: "vps-host", sharedSnapshotStore: true}) { pool { sharedSnapshotStore } } }`, nil, &out)
		if !out.CreatePool.Pool.SharedSnapshotStore || e.count("pools", "name = 'nfs' AND shared_snapshot_store") != 1 {
			t.Errorf("created %+v, not sharing its store", out)
		}
		if n := e.count("audit_events", "action = 'pool.create' AND (details->>'sharedSnapshotStore')::boolean"); n != 1 {
			t.Errorf("%d audit rows of a pool created sharing its store, want 1", n)
		}
	})

	t.Run("set", func(t *testing.T) {
		pool := e.pool("later-nfs", "vps-host", nil)
		for _, want := range []bool{true, false, true} {
			var out struct {
				SetPoolSharedSnapshotStore struct {
					Pool struct {
						ID                  string
						SharedSnapshotStore bool
					}
				}
			}
			e.must(e.operator, setSharedStore, map[string]any{"p": pool, "s": want}, &out)
			if got := out.SetPoolSharedSnapshotStore.Pool; got.ID != pool || got.SharedSnapshotStore != want || shared(pool) != want {
				t.Fatalf("set %v: %+v", want, got)
			}
		}
		if n := e.count("audit_events", "action = 'pool.setSharedSnapshotStore' AND outcome = 'success'"); n != 3 {
			t.Errorf("%d audit rows of the changes, want 3", n)
		}
	})

	t.Run("refused", func(t *testing.T) {
		hosted := e.pool("refusals", "vps-host", nil)
		provider := e.providerPool("cloud", nil)
		member := e.world("gamma").member
		for _, c := range []struct {
			name, token, query string
			vars               map[string]any
			code, field        string
		}{
			{"create a provider pool sharing a store", e.operator,
				`mutation { createPool(input: {name: "cloud-nfs", class: "provider", sharedSnapshotStore: true}) { pool { id } } }`, nil,
				"INVALID_INPUT", "sharedSnapshotStore"},
			{"a provider pool shares a store", e.operator, setSharedStore, map[string]any{"p": provider, "s": true}, "INVALID_INPUT", "sharedSnapshotStore"},
			{"an unknown pool", e.operator, setSharedStore, map[string]any{"p": "pool_" + strings.Repeat("0", 26), "s": true}, "NOT_FOUND", "poolId"},
			{"not a pool ID", e.operator, setSharedStore, map[string]any{"p": "host_" + strings.Repeat("0", 26), "s": true}, "NOT_FOUND", "poolId"},
			{"a member sets it", member, setSharedStore, map[string]any{"p": hosted, "s": true}, "FORBIDDEN", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.do(c.token, c.query, c.vars)
				if r.code() != c.code || (c.field != "" && r.Errors[0].Extensions.Field != c.field) {
					t.Fatalf("answered %+v, want %s on %q", r.Errors, c.code, c.field)
				}
			})
		}
		if n := e.count("pools", "name IN ('refusals', 'cloud', 'cloud-nfs') AND shared_snapshot_store"); n != 0 {
			t.Errorf("%d pools share a store after refusals", n)
		}
		if n := e.count("audit_events", "action = 'pool.setSharedSnapshotStore' AND outcome <> 'success'"); n != 4 {
			t.Errorf("%d failed-attempt audit rows of the changes, want 4", n)
		}
	})
}

const setCertified = `mutation($p: ID!, $r: Boolean!) { setPoolRequireCertifiedHosts(input: {poolId: $p, requireCertifiedHosts: $r}) {
	pool { id requireCertifiedHosts } } }`

// TestPoolRequireCertifiedHosts: a hosted pool says whether it places only
// on certified hosts: false unless createPool sets it, changed by
// setPoolRequireCertifiedHosts (audited), shown on Pool. A provider pool
// cannot require it (a coded error naming the field, nothing written),
// and members cannot set it.
func TestPoolRequireCertifiedHosts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	required := func(pool string) bool {
		t.Helper()
		var out struct {
			Node struct{ RequireCertifiedHosts bool }
		}
		e.must(e.operator, `query($id: ID!) { node(id: $id) { ... on Pool { requireCertifiedHosts } } }`, map[string]any{"id": pool}, &out)
		return out.Node.RequireCertifiedHosts
	}

	t.Run("created", func(t *testing.T) {
		if plain := e.pool("plain", "vps-host", nil); required(plain) {
			t.Errorf("a pool requires certified hosts by default")
		}
		var out struct {
			CreatePool struct {
				Pool struct{ RequireCertifiedHosts bool }
			}
		}
		e.must(e.operator, `mutation { createPool(input: {name: "attested", class: "vps-host", requireCertifiedHosts: true}) { pool { requireCertifiedHosts } } }`, nil, &out)
		if !out.CreatePool.Pool.RequireCertifiedHosts || e.count("pools", "name = 'attested' AND require_certified_hosts") != 1 {
			t.Errorf("created %+v, not requiring certified hosts", out)
		}
		if n := e.count("audit_events", "action = 'pool.create' AND (details->>'requireCertifiedHosts')::boolean"); n != 1 {
			t.Errorf("%d audit rows of a pool created requiring certified hosts, want 1", n)
		}
	})

	t.Run("set", func(t *testing.T) {
		pool := e.pool("later-attested", "vps-host", nil)
		for _, want := range []bool{true, false, true} {
			var out struct {
				SetPoolRequireCertifiedHosts struct {
					Pool struct {
						ID                    string
						RequireCertifiedHosts bool
					}
				}
			}
			e.must(e.operator, setCertified, map[string]any{"p": pool, "r": want}, &out)
			if got := out.SetPoolRequireCertifiedHosts.Pool; got.ID != pool || got.RequireCertifiedHosts != want || required(pool) != want {
				t.Fatalf("set %v: %+v", want, got)
			}
		}
		if n := e.count("audit_events", "action = 'pool.setRequireCertifiedHosts' AND outcome = 'success'"); n != 3 {
			t.Errorf("%d audit rows of the changes, want 3", n)
		}
	})

	t.Run("refused", func(t *testing.T) {
		hosted := e.pool("certified-refusals", "vps-host", nil)
		provider := e.providerPool("certified-cloud", nil)
		member := e.world("delta").member
		for _, c := range []struct {
			name, token, query string
			vars               map[string]any
			code, field        string
		}{
			{"create a provider pool requiring certified hosts", e.operator,
				`mutation { createPool(input: {name: "cloud-attested", class: "provider", requireCertifiedHosts: true}) { pool { id } } }`, nil,
				"INVALID_INPUT", "requireCertifiedHosts"},
			{"a provider pool requires certified hosts", e.operator, setCertified, map[string]any{"p": provider, "r": true}, "INVALID_INPUT", "requireCertifiedHosts"},
			{"an unknown pool", e.operator, setCertified, map[string]any{"p": "pool_" + strings.Repeat("0", 26), "r": true}, "NOT_FOUND", "poolId"},
			{"a member sets it", member, setCertified, map[string]any{"p": hosted, "r": true}, "FORBIDDEN", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.do(c.token, c.query, c.vars)
				if r.code() != c.code || (c.field != "" && r.Errors[0].Extensions.Field != c.field) {
					t.Fatalf("answered %+v, want %s on %q", r.Errors, c.code, c.field)
				}
			})
		}
		if n := e.count("pools", "name IN ('certified-refusals', 'certified-cloud', 'cloud-attested') AND require_certified_hosts"); n != 0 {
			t.Errorf("%d pools require certified hosts after refusals", n)
		}
		if n := e.count("pools", "name = 'cloud-attested'"); n != 0 {
			t.Errorf("the refused provider pool was created")
		}
		if n := e.count("audit_events", "action = 'pool.setRequireCertifiedHosts' AND outcome <> 'success'"); n != 3 {
			t.Errorf("%d failed-attempt audit rows of the changes, want 3", n)
		}
	})
}
