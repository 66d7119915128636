package lifecycle

import (
	"strings"
	"testing"
)

// grid is the state table written out by hand: row is from, column is to,
// in the order of States. It is the specification CanTransition must match.
const grid = `
             PEN PRO STA RUN STO STD PAU REB DEL DED ERR LOS
PENDING       .   x   .   .   .   .   .   .   x   .   x   .
PROVISIONING  x   .   x   .   .   x   .   .   x   .   x   x
STARTING      .   .   .   x   .   .   x   .   x   .   x   x
RUNNING       .   .   .   .   x   .   x   x   x   .   x   x
STOPPING      .   .   .   .   .   x   .   .   x   .   x   x
STOPPED       x   .   x   .   .   .   .   .   x   .   x   x
PAUSED        .   .   .   x   x   .   .   .   x   .   x   x
REBOOTING     .   .   .   x   .   .   .   .   x   .   x   x
DELETING      .   .   .   .   .   .   .   .   .   x   x   .
DELETED       .   .   .   .   .   .   .   .   .   .   .   .
ERROR         x   .   .   .   .   .   .   .   x   .   .   .
LOST          x   .   .   x   .   x   x   .   x   .   x   .
`

func TestEveryPair(t *testing.T) {
	rows := strings.Split(strings.TrimSpace(grid), "\n")[1:]
	if len(rows) != len(States) {
		t.Fatalf("grid has %d rows, want %d", len(rows), len(States))
	}
	for i, row := range rows {
		cells := strings.Fields(row)
		from := State(cells[0])
		if from != States[i] {
			t.Fatalf("row %d is %s, want %s", i, from, States[i])
		}
		for j, to := range States {
			want := cells[j+1] == "x"
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestRules(t *testing.T) {
	for _, s := range States {
		t.Run(string(s), func(t *testing.T) {
			if _, ok := transitions[s]; !ok {
				t.Fatalf("%s has no row in the table", s)
			}
			canDelete := CanTransition(s, Deleting)
			if want := s != Deleted && s != Deleting; canDelete != want {
				t.Errorf("%s → DELETING allowed = %v, want %v", s, canDelete, want)
			}
			if CanTransition(s, s) {
				t.Errorf("%s → itself is allowed", s)
			}
		})
	}
	if len(transitions[Deleted]) != 0 {
		t.Error("DELETED is not terminal")
	}
	for _, s := range []State{Provisioning, Stopped} {
		if !CanTransition(s, Pending) {
			t.Errorf("%s cannot recreate", s)
		}
	}
	if len(transitions) != len(States) {
		t.Errorf("the table has %d rows for %d states", len(transitions), len(States))
	}
}
