package migrations_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/sqlc"
)

// TestLiveLeasePlan checks an instance's live leases (what every step's row
// lock, a host's spec and a release read) are found through the one index
// that answers the predicate, in a table that grew by thousands of leases
// since its statistics were taken: a fleet is created faster than
// autovacuum analyzes, and on a machine with autovacuum off it never does.
func TestLiveLeasePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The leases' instances and IP pool need not exist for a plan:
	// replica mode skips the foreign keys' triggers.
	for _, sql := range []string{
		"SET session_replication_role = replica",
		`INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id)
		 SELECT gen_random_uuid(), '00000000-0000-0000-0000-000000000001', '10.0.0.0'::inet + n, 'mac', gen_random_uuid()
		 FROM generate_series(1, 5000) n`,
		"SET session_replication_role = origin",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var plan []struct{ Plan planNode }
	if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT address, mac FROM ip_leases
		WHERE instance_id = gen_random_uuid() AND released_at IS NULL`).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if got := plan[0].Plan.indexes(); !slices.Equal(got, []string{"ip_leases_instance_live"}) {
		raw, _ := json.Marshal(plan)
		t.Errorf("the live leases of an instance are read through %v, want only ip_leases_instance_live; plan: %s", got, raw)
	}
}

// TestPendingPlainPlan checks the pending instances a placement batches
// are told from those that kept a lease without reading the leases, in a
// table that grew by thousands of leases since its statistics were taken
// (as TestLiveLeasePlan): planned on such statistics, a check of the
// leases read every live lease once per instance (seen in a
// 10,000-instance fleet: 10.7 ms a call, under the pool's lock).
func TestPendingPlainPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var ran testenv.Statements
	conn, err := testenv.Traced(t, testenv.DB(t), &ran).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tenant, poolID := uuid.New(), uuid.New()
	// Statistics taken when every lease was released and no instance was
	// pending, then a fleet's leases and pending instances. Replica mode
	// skips the foreign keys' triggers: nothing else need exist.
	for _, sql := range []string{
		"SET session_replication_role = replica",
		`INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id, released_at)
		 SELECT gen_random_uuid(), '00000000-0000-0000-0000-000000000001', '10.1.0.0'::inet + n, 'mac', gen_random_uuid(), now()
		 FROM generate_series(1, 100) n`,
		"ANALYZE ip_leases",
		"ANALYZE instances",
		`INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id)
		 SELECT gen_random_uuid(), '00000000-0000-0000-0000-000000000001', '10.0.0.0'::inet + n, 'mac', gen_random_uuid()
		 FROM generate_series(1, 5000) n`,
		`INSERT INTO instances (id, tenant_id, pool_id, flavor_id, image_id, image_url, image_sha256, image_format,
		     image_verified, name, ssh_keys, vcpus, memory_mb, disk_gb, desired_state, state)
		 SELECT gen_random_uuid(), '` + tenant.String() + `', '` + poolID.String() + `', gen_random_uuid(), gen_random_uuid(),
		     'u', 's', 'qcow2', true, 'vm-' || n, '{}', 1, 512, 10, 'RUNNING', 'PENDING'
		 FROM generate_series(1, 50) n`,
		"SET session_replication_role = origin",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	arg := sqlc.LockPendingPlainParams{PoolID: poolID, TenantID: tenant, PlacedID: uuid.New(), Lim: 31}
	if _, err := sqlc.New(conn).LockPendingPlain(ctx, arg); err != nil { // to have its text
		t.Fatal(err)
	}
	var plan []struct{ Plan planNode }
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+ran.SQL("LockPendingPlain"), arg.PoolID, arg.TenantID, arg.PlacedID, arg.Lim).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if leases := plan[0].Plan.on("ip_leases"); len(leases) > 0 {
		raw, _ := json.Marshal(plan)
		t.Errorf("the pending instances to batch are read with %d reads of ip_leases, want none; plan: %s", len(leases), raw)
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

// on lists the nodes under n that read relation.
func (n planNode) on(relation string) []planNode {
	var out []planNode
	if n.Relation == relation {
		out = append(out, n)
	}
	for _, c := range n.Plans {
		out = append(out, c.on(relation)...)
	}
	return out
}

// indexes lists the indexes the plan under n scans.
func (n planNode) indexes() []string {
	var out []string
	if n.Index != "" {
		out = append(out, n.Index)
	}
	for _, c := range n.Plans {
		out = append(out, c.indexes()...)
	}
	return out
}
