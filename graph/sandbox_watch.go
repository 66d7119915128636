package graph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/live"
)

// watchSandboxes serves one sandboxEvents subscription, on the same hub,
// with the same rules as instanceEvents: its tenant's only for a member,
// ordered and deduped by version, a resync after Redis dropped.
func (r *Resolver) watchSandboxes(ctx context.Context, filter *model.SandboxEventFilter, includeCurrent bool) (<-chan model.SandboxEvent, error) {
	out := make(chan model.SandboxEvent, 1)
	err := r.subscribe(ctx, includeCurrent, func() (subscribeFunc, stream, error) {
		f, match, err := sandboxWatchFilter(filter)
		if err != nil {
			return nil, nil, err
		}
		if err := r.visible(ctx, f); err != nil {
			return nil, nil, err
		}
		w := &sandboxWatcher{r: r, ctx: ctx, out: out, filter: f, match: match, seen: map[uuid.UUID]int64{}}
		return func(tenant string, onDrop func(string)) feed {
			return r.hubFeed(r.live.SubscribeSandboxes(tenant, match, onDrop))
		}, w, nil
	}, func() { close(out) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// visible checks that the caller may see the sandboxes and the template a
// filter names: another tenant's are NOT_FOUND, as everywhere.
func (r *Resolver) visible(ctx context.Context, f control.SandboxWatchFilter) error {
	for i, id := range f.IDs {
		if _, err := r.svc.Sandbox(ctx, id); err != nil {
			return asField(err, fmt.Sprintf("filter.ids[%d]", i))
		}
	}
	if f.TemplateID != nil {
		if _, err := r.svc.SandboxTemplate(ctx, *f.TemplateID); err != nil {
			return asField(err, "filter.templateId")
		}
	}
	return nil
}

// asField names field as the input at fault of a NOT_FOUND error.
func asField(err error, field string) error {
	var e *apierr.Error
	if errors.As(err, &e) && e.Code == apierr.NotFound {
		return apierr.NotFoundf(field, "%s", e.Message)
	}
	return err
}

// sandboxWatcher delivers one subscription's sandbox events, remembering
// the version it last delivered of each sandbox.
type sandboxWatcher struct {
	r      *Resolver
	ctx    context.Context
	out    chan<- model.SandboxEvent
	filter control.SandboxWatchFilter
	match  func(*events.SandboxEvent) bool
	seen   map[uuid.UUID]int64
}

// snapshot delivers each live matching sandbox as it is now or, after a
// resync, replays the events recorded since since.
func (w *sandboxWatcher) snapshot(since time.Time) bool {
	var (
		evs []events.SandboxEvent
		err error
	)
	if since.IsZero() {
		evs, err = w.r.svc.CurrentSandboxes(w.ctx, w.filter)
	} else {
		evs, err = w.r.svc.SandboxEventsSince(w.ctx, w.filter, since)
	}
	if err != nil {
		return false
	}
	for i := range evs {
		if !w.match(&evs[i]) {
			continue
		}
		if !w.emit(&evs[i], true) {
			return false
		}
	}
	return true
}

func (w *sandboxWatcher) live(d live.Delivery) bool { return w.emit(d.Sandbox, false) }

// emit delivers ev unless an event of the same or a later version of its
// sandbox was delivered already.
func (w *sandboxWatcher) emit(ev *events.SandboxEvent, snapshot bool) bool {
	m, err := sandboxEvent(*ev)
	if err != nil {
		return true // not an event this server can show; skip it
	}
	m.Snapshot = snapshot
	id := m.Sandbox.ID
	if ev.Version <= w.seen[id] {
		return true
	}
	w.seen[id] = ev.Version
	select {
	case w.out <- m:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// sandboxEvent shows an event at the API.
func sandboxEvent(ev events.SandboxEvent) (model.SandboxEvent, error) {
	sbx, err := ev.Sandbox.Sandbox()
	if err != nil {
		return model.SandboxEvent{}, err
	}
	return model.SandboxEvent{Type: model.SandboxEventType(ev.Type), Sandbox: sbx, Version: int(ev.Version), Reason: ev.Reason, At: ev.At}, nil
}

// sandboxWatchFilter decodes a sandboxEvents filter into a database
// filter and the matching function the hub applies to live events.
func sandboxWatchFilter(in *model.SandboxEventFilter) (control.SandboxWatchFilter, func(*events.SandboxEvent) bool, error) {
	var f control.SandboxWatchFilter
	if in == nil {
		return f, func(*events.SandboxEvent) bool { return true }, nil
	}
	var d decoder
	wanted := map[string]bool{}
	for i, s := range in.Ids {
		f.IDs = append(f.IDs, d.id(ids.Sandbox, fmt.Sprintf("filter.ids[%d]", i), s))
		wanted[s] = true
	}
	f.TemplateID = d.ptrID(ids.SandboxTemplate, "filter.templateId", in.TemplateID)
	if d.err != nil {
		return f, nil, d.err
	}
	var template string
	if in.TemplateID != nil {
		template = *in.TemplateID
	}
	return f, func(ev *events.SandboxEvent) bool {
		return (len(wanted) == 0 || wanted[ev.Sandbox.ID]) && (template == "" || ev.Sandbox.TemplateID == template)
	}, nil
}
