package proxmox

import (
	"sync"
	"time"
)

// listing is what the driver's last /cluster/resources read said, kept so
// that the calls after it need not ask again (each call it saves is one
// request a lifecycle):
//
//   - Start, Stop and Delete take a VM's name (the identity check) and
//     pve status from it instead of GET …/status/current, when the VM was
//     listed less than Config.ListingMaxAge ago. A VMID freed and given to
//     another VM since that listing would be acted on; the driver's own
//     deletes and clones update the listing at once, so only another client
//     of the cluster reusing a VMID within that age can cause it.
//   - Create picks the new VMID as the lowest one ≥ 100 that the listing
//     (every VM and container of the cluster, templates included) does not
//     hold, instead of GET /cluster/nextid, which proposes the same. A VMID
//     taken since is refused by the clone ("already exists") and the next
//     one is tried.
//
// A VM not in the listing is never taken to be gone from it: a VM made
// after the read began would not be there. It is safe for concurrent use.
type listing struct {
	mu  sync.Mutex
	at  time.Time        // when the read that filled vms began
	vms map[int]listedVM // by VMID, every row of the read
	own map[int]taken    // VMIDs held that the listing may not show
}

// taken is a VMID this driver cloned onto (or found taken), or deleted
// without waiting (going), and when.
type taken struct {
	at    time.Time
	going bool
}

// listedVM is a VM as the listing read it.
type listedVM struct {
	name   string
	status string // pve's: "running", "stopped"
}

// fill replaces the listing by a read begun at at.
func (l *listing) fill(at time.Time, rs []resource) {
	vms := make(map[int]listedVM, len(rs))
	for _, r := range rs {
		vms[int(r.VMID)] = listedVM{name: r.Name, status: r.Status}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.Before(l.at) {
		return // a newer read filled it already
	}
	l.at, l.vms = at, vms
	for id, t := range l.own {
		_, listed := vms[id]
		switch {
		case t.going && !listed && !t.at.After(at): // gone
		case !t.going && listed: // the clone is listed: the row holds it
		case !t.going && at.Sub(t.at) > time.Minute: // a clone that failed
		default:
			continue
		}
		delete(l.own, id)
	}
}

// vm returns VM vmid as a listing younger than maxAge read it.
func (l *listing) vm(vmid int, maxAge time.Duration) (listedVM, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.vms[vmid]
	if !ok || time.Since(l.at) >= maxAge {
		return listedVM{}, false
	}
	if t, held := l.own[vmid]; held && t.at.After(l.at) {
		return listedVM{}, false // cloned since the read: the row is another VM's
	}
	return v, true
}

// forget drops VM vmid, deleted by this driver; going when its delete
// task may still run, so that its VMID is not chosen until a listing
// begun after now no longer shows it.
func (l *listing) forget(vmid int, going bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.vms, vmid)
	if going {
		l.take(vmid, true)
	}
}

// freeID returns the lowest VMID from 100 that a listing younger than
// maxAge does not hold and that this driver has not cloned onto since,
// and marks it taken; ok is false when the listing is too old.
func (l *listing) freeID(maxAge time.Duration) (vmid int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.vms == nil || time.Since(l.at) >= maxAge {
		return 0, false
	}
	for vmid = 100; ; vmid++ {
		_, listed := l.vms[vmid]
		_, cloned := l.own[vmid]
		if !listed && !cloned {
			break
		}
	}
	l.take(vmid, false)
	return vmid, true
}

// take marks vmid as held now. l.mu is held.
func (l *listing) take(vmid int, going bool) {
	if l.own == nil {
		l.own = map[int]taken{}
	}
	l.own[vmid] = taken{at: time.Now(), going: going}
}

// taken marks vmid as held by a VM the listing did not show.
func (l *listing) taken(vmid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.take(vmid, false)
}
