package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/live"
)

// watch serves one instanceEvents subscription. A websocket subscription
// joins the group of its shape, which executes each live event once for
// all its members; the group's own execution comes here too, and is
// subscribed to the hub for them.
func (r *Resolver) watch(ctx context.Context, filter *model.InstanceEventFilter, includeCurrent bool) (<-chan model.InstanceEvent, error) {
	out := make(chan model.InstanceEvent, 1)
	if g := groupFrom(ctx); g != nil {
		return out, r.feedGroup(ctx, g, filter, out)
	}
	var w *watcher
	err := r.subscribe(ctx, includeCurrent, func() (subscribeFunc, stream, error) {
		f, match, err := watchFilter(filter)
		if err != nil {
			return nil, nil, err
		}
		w = &watcher{r: r, ctx: ctx, out: out, filter: f, seen: map[uuid.UUID]int64{}}
		return func(tenant string, onDrop func(string)) feed {
			if s := slotFrom(ctx); s != nil && r.fan != nil {
				if m, err := r.fan.join(ctx, iam.FromContext(ctx), out, onDrop); err == nil {
					s.m, w.m, m.seen, m.snapshot = m, m, w.seen, w.snapshot
					return feed{member: m, dropped: m.dropped, end: func() { r.fan.leave(m) }}
				}
			}
			return r.hubFeed(r.live.Subscribe(tenant, match, onDrop))
		}, w, nil
	}, func() {
		if w == nil || w.m == nil { // a member's response loop ends by itself
			close(out)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// feedGroup subscribes a group's execution to the hub: each event the
// group feeds it is converted here and executed by gqlgen, once.
func (r *Resolver) feedGroup(ctx context.Context, g *group, filter *model.InstanceEventFilter, out chan<- model.InstanceEvent) error {
	if r.live == nil {
		return apierr.New(apierr.FailedPrecondition, "live events are not served here")
	}
	_, match, err := watchFilter(filter)
	if err != nil {
		return err
	}
	g.sub = r.live.SubscribeShared(groupTenant(iam.FromContext(ctx)), match)
	g.feed = func(d live.Delivery) (uuid.UUID, int64, bool) {
		v, err := d.Event.Instance.Instance()
		if err != nil {
			return uuid.Nil, 0, false // not an event this server can show
		}
		out <- model.InstanceEvent{Type: model.EventType(d.Event.Type), Instance: v, Version: int(d.Event.Version)}
		return v.ID, d.Event.Version, true
	}
	return nil
}

// subscribeFunc registers a subscriber, with the hub or a group.
type subscribeFunc func(tenant string, onDrop func(reason string)) feed

// feed is where a subscriber's deliveries come from, until dropped is
// closed; end unsubscribes. A hub subscriber's come on c. A group's
// member takes its group's events in its websocket's response loop,
// which also starts the member's snapshots (member.catchUp), so no
// goroutine of the subscriber's own waits here.
type feed struct {
	c       <-chan live.Delivery
	member  *member
	dropped <-chan struct{}
	end     func()
}

// stream is what one subscription delivers.
type stream interface {
	// snapshot delivers the current state (since zero) or what changed
	// since since, after a resync; false when the subscription ended.
	snapshot(since time.Time) bool
	// live delivers one event from the hub; false when the subscription
	// ended.
	live(d live.Delivery) bool
}

// hubFeed is the feed of a hub subscriber.
func (r *Resolver) hubFeed(sub *live.Sub) feed {
	return feed{c: sub.C, dropped: sub.Dropped(), end: func() { r.live.Unsubscribe(sub) }}
}

// subscribe serves one subscription: it subscribes to the hub (through
// what setup returns, once the caller may subscribe) before reading the
// current state, so nothing is missed between the two, and delivers until
// the client goes, falls behind or the hub drops it; then it calls done.
func (r *Resolver) subscribe(ctx context.Context, includeCurrent bool, setup func() (subscribeFunc, stream, error), done func()) error {
	p, err := callerOf(ctx)
	if err != nil {
		return err
	}
	if r.live == nil {
		return apierr.New(apierr.FailedPrecondition, "live events are not served here")
	}
	subscribeTo, st, err := setup()
	if err != nil {
		return err
	}
	conn := connFrom(ctx)
	if conn != nil {
		if int(conn.subs.Add(1)) > r.maxSubs {
			conn.subs.Add(-1)
			return apierr.New(apierr.RateLimited, "at most %d subscriptions per connection", r.maxSubs)
		}
	}
	tenant := ""
	if !p.IsOperator() {
		tenant = ids.Encode(ids.Tenant, p.TenantID)
	}
	sub := subscribeTo(tenant, func(reason string) {
		if conn != nil {
			conn.close(closeSlowConsumer, reason)
		}
	})
	end := func() {
		sub.end()
		if conn != nil {
			conn.subs.Add(-1)
		}
		done()
	}
	if sub.member != nil {
		// The member's response loop ends when ctx does or it is
		// dropped; ctx ends with the operation either way.
		context.AfterFunc(ctx, end)
		sub.member.catchUp(time.Time{}, includeCurrent)
		return nil
	}
	go func() {
		defer end()
		if includeCurrent && !st.snapshot(time.Time{}) {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-sub.dropped:
				return
			case d := <-sub.c:
				if d.Resync {
					if !st.snapshot(d.Since) {
						return
					}
					continue
				}
				if !st.live(d) {
					return
				}
			}
		}
	}()
	return nil
}

// watcher delivers one subscription's events, remembering the version it
// last delivered of each instance.
type watcher struct {
	r      *Resolver
	ctx    context.Context
	out    chan<- model.InstanceEvent
	filter control.WatchFilter
	seen   map[uuid.UUID]int64
	// m, when set, is the watcher's membership of a group: events go to
	// its websocket through it.
	m *member
}

// snapshot delivers the current state of the matching instances (changed
// since since, when it is set), skipping what was already delivered.
func (w *watcher) snapshot(since time.Time) bool {
	insts, err := w.r.svc.WatchedInstances(w.ctx, w.filter, since)
	if err != nil {
		return false
	}
	for _, v := range insts {
		typ := model.EventTypeUpdated
		if v.State == "DELETED" {
			typ = model.EventTypeDeleted
		}
		if !w.emit(model.InstanceEvent{Type: typ, Instance: v, Version: int(v.Version), Snapshot: true}) {
			return false
		}
	}
	return true
}

func (w *watcher) live(d live.Delivery) bool {
	ev := d.Event
	v, err := ev.Instance.Instance()
	if err != nil {
		return true // not an event this server can show; skip it
	}
	return w.emit(model.InstanceEvent{Type: model.EventType(ev.Type), Instance: v, Version: int(ev.Version)})
}

// emit delivers ev unless an event of the same or a later version of its
// instance was delivered already.
func (w *watcher) emit(ev model.InstanceEvent) bool {
	id := ev.Instance.ID
	if int64(ev.Version) <= w.seen[id] {
		return true
	}
	w.seen[id] = int64(ev.Version)
	if w.m != nil {
		return w.m.send(w.ctx, item{own: &ev})
	}
	select {
	case w.out <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// watchFilter decodes a subscription's filter into a database filter and
// the matching function the hub applies to live events.
func watchFilter(in *model.InstanceEventFilter) (control.WatchFilter, func(*events.InstanceEvent) bool, error) {
	var f control.WatchFilter
	all := func(*events.InstanceEvent) bool { return true }
	if in == nil {
		return f, all, nil
	}
	var d decoder
	wanted := map[string]bool{}
	for i, s := range in.Ids {
		f.IDs = append(f.IDs, d.id(ids.Instance, fmt.Sprintf("filter.ids[%d]", i), s))
		wanted[s] = true
	}
	f.PoolID = d.ptrID(ids.Pool, "filter.poolId", in.PoolID)
	if d.err != nil {
		return f, nil, d.err
	}
	var pool, state string
	if in.PoolID != nil {
		pool = *in.PoolID
	}
	if in.State != nil {
		state = string(*in.State)
		f.State = &state
	}
	return f, func(ev *events.InstanceEvent) bool {
		return (len(wanted) == 0 || wanted[ev.Instance.ID]) &&
			(pool == "" || ev.Instance.PoolID == pool) &&
			(state == "" || ev.Instance.State == state)
	}, nil
}
