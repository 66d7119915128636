package events_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// TestWake: the instances woken each get a work row on vps.instances, all
// in one statement (a host's report or a release wakes up to a pool's 100
// pending instances); none woken writes nothing.
func TestWake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var ran testenv.Statements
	db := testenv.Traced(t, testenv.DB(t), &ran)
	q := sqlc.New(db)
	woken := []uuid.UUID{ids.New(), ids.New(), ids.New(), ids.New(), ids.New()}
	for _, c := range []struct {
		name       string
		instances  []uuid.UUID
		statements []string
	}{
		{"none", nil, nil},
		{"five", woken, []string{"WakeKeys"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := events.Wake(ctx, q, c.instances); err != nil {
				t.Fatal(err)
			}
			if got := ran.Take(); !slices.Equal(got, c.statements) {
				t.Errorf("statements %v, want %v", got, c.statements)
			}
		})
	}
	rows, err := db.Query(ctx, "SELECT key FROM outbox WHERE topic = $1 ORDER BY id", vps.TopicInstances)
	if err != nil {
		t.Fatal(err)
	}
	var keys []uuid.UUID
	for rows.Next() {
		var k uuid.UUID
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, woken) {
		t.Errorf("work rows for %v, want %v", keys, woken)
	}
}
