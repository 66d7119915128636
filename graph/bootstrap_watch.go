package graph

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/live"
)

// watchBootstraps serves one providerBootstrapEvents subscription, on the
// same hub, with the same rules as instanceEvents (ordered and deduped by
// version, a resync after Redis dropped), for operators only.
func (r *Resolver) watchBootstraps(ctx context.Context, includeCurrent bool) (<-chan model.ProviderBootstrapEvent, error) {
	out := make(chan model.ProviderBootstrapEvent, 1)
	err := r.subscribe(ctx, includeCurrent, func() (subscribeFunc, stream, error) {
		if p := iam.FromContext(ctx); p == nil || !p.IsOperator() {
			return nil, nil, apierr.New(apierr.Forbidden, "provider bootstraps are for operators only")
		}
		w := &bootstrapWatcher{r: r, ctx: ctx, out: out, seen: map[uuid.UUID]int64{}}
		return func(_ string, onDrop func(string)) feed { return r.hubFeed(r.live.SubscribeBootstraps(onDrop)) }, w, nil
	}, func() { close(out) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bootstrapWatcher delivers one subscription's bootstrap events,
// remembering the version it last delivered of each bootstrap.
type bootstrapWatcher struct {
	r    *Resolver
	ctx  context.Context
	out  chan<- model.ProviderBootstrapEvent
	seen map[uuid.UUID]int64
}

// snapshot delivers every bootstrap as it is now, on subscribing and
// after a resync alike (there are at most 500, the list's bound), skipping
// what was already delivered.
func (w *bootstrapWatcher) snapshot(time.Time) bool {
	bs, err := w.r.svc.ProviderBootstraps(w.ctx)
	if err != nil {
		return false
	}
	for _, b := range bs {
		ev := model.ProviderBootstrapEvent{Type: model.ProviderBootstrapEventType(events.BootstrapStateType(b.State)),
			ProviderBootstrap: b, Version: int(b.Version), Snapshot: true}
		if !w.emit(ev) {
			return false
		}
	}
	return true
}

func (w *bootstrapWatcher) live(d live.Delivery) bool {
	b, err := d.Bootstrap.Bootstrap.ProviderBootstrap()
	if err != nil {
		return true // not an event this server can show; skip it
	}
	return w.emit(model.ProviderBootstrapEvent{Type: model.ProviderBootstrapEventType(d.Bootstrap.Type), ProviderBootstrap: b, Version: int(d.Bootstrap.Version)})
}

// emit delivers ev unless an event of the same or a later version of its
// bootstrap was delivered already.
func (w *bootstrapWatcher) emit(ev model.ProviderBootstrapEvent) bool {
	id := ev.ProviderBootstrap.ID
	if int64(ev.Version) <= w.seen[id] {
		return true
	}
	w.seen[id] = int64(ev.Version)
	select {
	case w.out <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}
