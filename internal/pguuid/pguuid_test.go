package pguuid_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/better-compute/vps/internal/pguuid"
	"github.com/better-compute/vps/internal/testenv"
)

func BenchmarkEncodeArray(b *testing.B) {
	ids := make([]uuid.UUID, 100)
	for i := range ids {
		ids[i] = uuid.New()
	}
	for _, registered := range []bool{false, true} {
		name := "pgx"
		if registered {
			name = "registered"
		}
		b.Run(name, func(b *testing.B) {
			m := pgtype.NewMap()
			if registered {
				pguuid.Register(m)
			}
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRoundTrip: through a pool set up as app.OpenDB's, a uuid.UUID, a nil
// and a non-nil *uuid.UUID and an array of them reach Postgres as the
// values they are.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	db := testenv.Open(t, testenv.ServerURL())
	id, other := uuid.New(), uuid.New()
	var none *uuid.UUID
	var (
		one, array string
		isNull     bool
		back       []uuid.UUID
	)
	err := db.QueryRow(context.Background(), "SELECT $1::uuid::text, $2::uuid[]::text, $3::uuid IS NULL, $4::uuid[]",
		id, []uuid.UUID{id, other}, none, []*uuid.UUID{&other}).Scan(&one, &array, &isNull, &back)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{" + id.String() + "," + other.String() + "}"; one != id.String() || array != want || !isNull || len(back) != 1 || back[0] != other {
		t.Errorf("got %s, %s, null %v, %v; want %s, %s, null, [%s]", one, array, isNull, back, id, want, other)
	}
}

// TestArrayWithoutDetour: an array of 100 IDs, and a *uuid.UUID, are
// encoded without the driver.Valuer's detour (a string and an error per ID:
// 2,003 allocations for the array without Register, 303 with it).
func TestArrayWithoutDetour(t *testing.T) { // not parallel: AllocsPerRun
	ids := make([]uuid.UUID, 100)
	for i := range ids {
		ids[i] = uuid.New()
	}
	m := pgtype.NewMap()
	pguuid.Register(m)
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 500 {
		t.Errorf("%v allocations to encode 100 IDs, want at most 500", allocs)
	}
	id := ids[0]
	allocs = testing.AllocsPerRun(10, func() {
		if _, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, &id, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 5 { // 20 through the detour
		t.Errorf("%v allocations to encode a *uuid.UUID, want at most 5", allocs)
	}
}
