package graph_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/better-compute/vps/ids"
)

// TestSharedPoolLeases: in a pool tenants share, a member counts only its
// own tenant's leased addresses; an operator counts all.
func TestSharedPoolLeases(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pool := e.pool("shared", "vps-host", nil)
	e.must(e.operator, `mutation($p: ID!) { createIpPool(input: {poolId: $p, cidr: "10.30.0.0/24", gateway: "10.30.0.1", rangeStart: "10.30.0.10", rangeEnd: "10.30.0.99"}) { pool { id } } }`,
		map[string]any{"p": pool}, nil)
	flavor := e.flavor("small", 1, 1024)
	image := e.image("debian", "PUBLIC", nil, true)
	leases := map[string]int{"acme": 1, "globex": 3}
	members := map[string]string{}
	addr := 10
	for name, n := range leases {
		tenant, member := e.tenant(name)
		members[name] = member
		for i := range n {
			var out struct {
				CreateInstance struct{ Instance struct{ ID string } }
			}
			e.must(member, createInstance, map[string]any{"in": map[string]any{"tenantId": tenant, "poolId": pool, "flavorId": flavor, "imageId": image,
				"name": name + "-" + string(rune('a'+i)), "sshKeys": []string{testKey}}}, &out)
			id, _ := ids.Decode(ids.Instance, out.CreateInstance.Instance.ID)
			if _, err := e.db.Exec(context.Background(), `INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id)
				SELECT $1, id, $2::inet, 'mac', $3 FROM ip_pools`, ids.New(), "10.30.0."+strconv.Itoa(addr), id); err != nil {
				t.Fatal(err)
			}
			addr++
		}
	}
	leased := func(token string) int {
		var out struct {
			Pools []struct{ IpPools []struct{ Leased int } }
		}
		e.must(token, `{ pools { ipPools { leased } } }`, nil, &out)
		if len(out.Pools) != 1 || len(out.Pools[0].IpPools) != 1 {
			t.Fatalf("pools = %+v", out.Pools)
		}
		return out.Pools[0].IpPools[0].Leased
	}
	for name, want := range leases {
		if got := leased(members[name]); got != want {
			t.Errorf("%s's member counts %d leased addresses, want its own %d", name, got, want)
		}
	}
	if got := leased(e.operator); got != 4 {
		t.Errorf("the operator counts %d leased addresses, want 4", got)
	}
}
