package hostd

import (
	"log/slog"
	"slices"
	"sync"

	"github.com/better-compute/vps/hostproto"
)

// xidBuffer holds the Xid events the daemon took from the Runtime until a
// report carrying them is accepted. It keeps one event per device and
// code, the newest, so a storm of one fault costs one entry, and a report
// carries at most hostproto.MaxXids, the newest. It is safe for
// concurrent use: the main loop adds, the report poster forgets.
type xidBuffer struct {
	log *slog.Logger

	mu   sync.Mutex
	held []hostproto.Xid
	// strangers are the addresses of dropped events, logged once each.
	strangers map[string]bool
}

// add holds xs, each replacing an older event of its device and code.
func (b *xidBuffer) add(xs []hostproto.Xid) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, x := range xs {
		i := slices.IndexFunc(b.held, func(h hostproto.Xid) bool { return h.Address == x.Address && h.Code == x.Code })
		switch {
		case i < 0:
			b.held = append(b.held, x)
		case !x.At.Before(b.held[i].At):
			b.held[i] = x
		}
	}
}

// report returns the events to send with a report whose inventory has
// gpus: those of its devices, oldest first, at most hostproto.MaxXids (the
// newest). An event of a device the inventory does not have is dropped and
// logged once per device: the gateway would refuse the report.
func (b *xidBuffer) report(gpus []hostproto.GPU) []hostproto.Xid {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = slices.DeleteFunc(b.held, func(x hostproto.Xid) bool {
		if slices.ContainsFunc(gpus, func(g hostproto.GPU) bool { return g.Address == x.Address }) {
			return false
		}
		if !b.strangers[x.Address] {
			if b.strangers == nil {
				b.strangers = make(map[string]bool)
			}
			b.strangers[x.Address] = true
			b.log.Warn("dropped an Xid event of a device that is not one of the host's GPUs", "address", x.Address, "xid", x.Code)
		}
		return true
	})
	out := slices.SortedStableFunc(slices.Values(b.held), func(a, b hostproto.Xid) int { return a.At.Compare(b.At) })
	if len(out) > hostproto.MaxXids {
		out = out[len(out)-hostproto.MaxXids:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// forget drops the events an accepted report carried; an event replaced
// since by a newer one of its device and code stays.
func (b *xidBuffer) forget(sent []hostproto.Xid) {
	if len(sent) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = slices.DeleteFunc(b.held, func(x hostproto.Xid) bool {
		return slices.ContainsFunc(sent, func(s hostproto.Xid) bool {
			return s.Address == x.Address && s.Code == x.Code && s.At.Equal(x.At) && s.Message == x.Message
		})
	})
}
