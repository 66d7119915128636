package migrations_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/better-compute/vps/internal/testenv"
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

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	Index string     `json:"Index Name"`
	Plans []planNode `json:"Plans"`
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
