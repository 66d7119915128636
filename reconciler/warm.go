package reconciler

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/lifecycle"
)

// warmInstance is what the upkeep of a warm pool knows of one of its free
// instances (warm, not claimed, not asked to go).
type warmInstance struct {
	id      uuid.UUID
	version int64
	state   lifecycle.State
	created time.Time
}

// warmPool is what the upkeep of one template's warm pool depends on.
type warmPool struct {
	// want is the template's warm count; 0 once it is deleted.
	want int
	// version is the template's instance version, of which new warm
	// instances are made and the only one sandboxes claim.
	version int64
	free    []warmInstance
	// A PENDING instance created more than stuckAfter before now waits
	// for room on a host.
	now        time.Time
	stuckAfter time.Duration
}

// upkeep is what to do to a warm pool.
type upkeep struct {
	// retire are free instances to delete.
	retire []uuid.UUID
	// add is how many instances of the current version to add.
	add int
	// spare is an instance of an older version to retire as well when the
	// owner's quota refuses the new ones: none of the current version is
	// on its way to PAUSED, so keeping it would stall the rollover. Nil:
	// none.
	spare uuid.UUID
}

// planPool decides a warm pool's upkeep. It keeps want instances of the
// current version, the readiest ones, and replaces broken ones (ERROR,
// LOST). Instances of an older version, which no sandbox claims any more,
// are retired as those of the current version become PAUSED, so the pool
// holds want ready instances throughout a rollover if capacity allows;
// when it does not (a new instance waits for room, or the quota refuses
// it) and nothing new is booting, one old instance makes room at a time.
func planPool(p warmPool) upkeep {
	var u upkeep
	var current, old []warmInstance
	for _, w := range p.free {
		switch {
		case w.state == lifecycle.Error || w.state == lifecycle.Lost:
			u.retire = append(u.retire, w.id)
		case w.version == p.version:
			current = append(current, w)
		default:
			old = append(old, w)
		}
	}
	byReadiness(current)
	byReadiness(old)
	if len(current) > p.want {
		u.retire = appendIDs(u.retire, current[p.want:])
		current = current[:p.want]
	}
	ready, booting, stuck := 0, 0, false
	for _, w := range current {
		switch {
		case w.state == lifecycle.Paused:
			ready++
		case w.state == lifecycle.Pending && p.now.Sub(w.created) > p.stuckAfter:
			stuck = true
		default:
			booting++
		}
	}
	keep := min(len(old), max(0, p.want-ready))
	u.retire = appendIDs(u.retire, old[keep:])
	u.add = p.want - len(current)
	if keep > 0 && booting == 0 {
		spare := old[keep-1].id // the least ready kept
		if stuck {
			u.retire = append(u.retire, spare)
		} else {
			u.spare = spare
		}
	}
	return u
}

// readiness orders states by how soon a sandbox could run on them.
var readiness = map[lifecycle.State]int{
	lifecycle.Paused: 0, lifecycle.Running: 1, lifecycle.Starting: 2, lifecycle.Provisioning: 3, lifecycle.Pending: 4,
}

// byReadiness sorts the readiest first, then the oldest.
func byReadiness(ws []warmInstance) {
	slices.SortStableFunc(ws, func(a, b warmInstance) int {
		ra, oka := readiness[a.state]
		rb, okb := readiness[b.state]
		if !oka {
			ra = len(readiness)
		}
		if !okb {
			rb = len(readiness)
		}
		return cmp.Or(cmp.Compare(ra, rb), a.created.Compare(b.created))
	})
}

func appendIDs(ids []uuid.UUID, ws []warmInstance) []uuid.UUID {
	for _, w := range ws {
		ids = append(ids, w.id)
	}
	return ids
}
