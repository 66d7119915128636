package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/formatter"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/live"
)

// Live instance events are executed and encoded once per shape: the
// subscriptions of one normalized document, operation, variables and
// authorization scope (tenant and role) form a group. The group holds one
// hub subscription and runs the operation once, as its scope and not as
// any one member, and encodes the response once: each member writes the
// same bytes inside its own operation's message (frames). Each member
// keeps what is its own: its snapshots (executed for it alone), the
// versions it has delivered, its queue, and being dropped when that queue
// fills, which never slows the group or the other members.

// fanout holds the groups of one handler.
type fanout struct {
	exec *executor.Executor
	svc  *control.Service
	hub  *live.Hub
	// buffer is how many events a member may fall behind before it is
	// dropped: the hub's.
	buffer int

	mu     sync.Mutex
	groups map[string]*group
}

// shared is one event as a group encoded it, for every member.
type shared struct {
	// resync, when set, asks the member to read what changed since
	// d.Since instead; resp is nil.
	d       live.Delivery
	id      uuid.UUID
	version int64
	resp    *graphql.Response
	// payload is resp encoded, as every member writes it.
	payload []byte
}

// group is the members of one shape and the execution they share.
type group struct {
	f      *fanout
	key    string
	ctx    context.Context
	cancel context.CancelFunc
	sub    *live.Sub
	// feed hands the group's execution one hub event; false when it is
	// not one this server can show.
	feed      func(live.Delivery) (id uuid.UUID, version int64, ok bool)
	responses graphql.ResponseHandler
	respCtx   context.Context

	mu      sync.RWMutex
	members map[*member]struct{}
}

// member is one subscription of a group. Its websocket's response loop
// (respond) takes the group's events from q itself; the member's
// snapshots are delivered through next by a goroutine that lives only as
// long as one does (catchUp), and the two take turns: the loop reads q
// only between a snapshot's end (ready) and the next resync. An idle
// member thus costs one goroutine, its response loop.
type member struct {
	g    *group
	ctx  context.Context // the subscription's: ends with it
	q    chan *shared    // from the group
	next chan item       // from a snapshot
	// snapshot delivers the current state (changed since since, when
	// set) through next; false when the subscription ended or the state
	// could not be read.
	snapshot func(since time.Time) bool
	// live is whether the response loop reads q; seen, the version of
	// each instance delivered last. Whichever of the loop and the
	// snapshot has its turn uses them.
	live bool
	seen map[uuid.UUID]int64
	// batch is the response loop's, reused.
	batch []*shared
	// out is the channel the member's resolver gave gqlgen: its own
	// events pass through it to be executed for it alone.
	out     chan model.InstanceEvent
	dropped chan struct{}
	once    sync.Once
	onDrop  func(reason string)
	// frames writes the group's responses to the member's websocket;
	// nil when they go through gqlgen's transport instead.
	frames *frames
}

// item is what a member's snapshot hands its response loop: an event
// executed for it alone; ready, when the snapshot is delivered; or end,
// when it could not be.
type item struct {
	own   *model.InstanceEvent
	ready bool
	end   bool
}

// newFanout returns the groups of a handler serving es.
func newFanout(es graphql.ExecutableSchema, svc *control.Service, hub *live.Hub, log *slog.Logger) *fanout {
	exec := executor.New(es)
	exec.SetErrorPresenter(presenter(log))
	exec.SetRecoverFunc(func(ctx context.Context, v any) error {
		log.ErrorContext(ctx, "resolver panic in a subscription group", "panic", v)
		return apierr.New(apierr.Internal, "internal error")
	})
	return &fanout{exec: exec, svc: svc, hub: hub, buffer: hub.Buffer(), groups: map[string]*group{}}
}

type groupKey struct{}

// groupFrom returns the group whose execution ctx is, if any.
func groupFrom(ctx context.Context) *group {
	g, _ := ctx.Value(groupKey{}).(*group)
	return g
}

// slot is where a websocket operation's resolver leaves its membership,
// for the operation's response loop to find.
type slot struct{ m *member }

type slotKey struct{}

func withSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, slotKey{}, &slot{})
}

func slotFrom(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// shapeKey is what the subscriptions of one group share: the normalized
// document, its operation and variables, and the scope it runs as.
func shapeKey(op *graphql.OperationContext, scope *iam.Principal) (string, error) {
	var doc bytes.Buffer
	formatter.NewFormatter(&doc).FormatQueryDocument(op.Doc)
	vars, err := json.Marshal(op.Variables) // map keys sorted
	if err != nil {
		return "", fmt.Errorf("encoding variables: %w", err)
	}
	return string(scope.Role) + "\x00" + scope.TenantID.String() + "\x00" + op.OperationName + "\x00" + doc.String() + "\x00" + string(vars), nil
}

// scopeOf is the principal a group runs as: only what decides which fields
// and objects its members may see, nothing of any one member's.
func scopeOf(p *iam.Principal) *iam.Principal {
	return &iam.Principal{Role: p.Role, TenantID: p.TenantID}
}

// join adds a member to the group of the operation ctx carries, starting
// the group if it is the first; out is the channel its resolver gave
// gqlgen. The member is attached before join
// returns, so it misses no event after; onDrop is called, once, if it
// falls behind.
func (f *fanout) join(ctx context.Context, p *iam.Principal, out chan model.InstanceEvent, onDrop func(string)) (*member, error) {
	op := graphql.GetOperationContext(ctx)
	scope := scopeOf(p)
	key, err := shapeKey(op, scope)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[key]
	if g == nil {
		if g, err = f.start(key, op, scope); err != nil {
			return nil, err
		}
		f.groups[key] = g
	}
	f.hub.Members(1)
	m := &member{
		g: g, ctx: ctx, q: make(chan *shared, f.buffer), next: make(chan item),
		out: out, dropped: make(chan struct{}), onDrop: onDrop, frames: newFrames(ctx),
	}
	g.mu.Lock()
	g.members[m] = struct{}{}
	g.mu.Unlock()
	return m, nil
}

// start runs op once as scope, for a group; the resolver, seeing the
// group in its context, subscribes the group to the hub.
func (f *fanout) start(key string, op *graphql.OperationContext, scope *iam.Principal) (*group, error) {
	ctx, cancel := context.WithCancel(context.Background())
	g := &group{f: f, key: key, cancel: cancel, members: map[*member]struct{}{}}
	g.ctx = graphql.StartOperationTrace(withLoaders(iam.WithPrincipal(context.WithValue(ctx, groupKey{}, g), scope), f.svc))
	own, errs := f.exec.CreateOperationContext(g.ctx, &graphql.RawParams{Query: op.RawQuery, OperationName: op.OperationName, Variables: op.Variables})
	if errs != nil {
		cancel()
		return nil, fmt.Errorf("starting the group of a subscription: %w", errs)
	}
	g.responses, g.respCtx = f.exec.DispatchOperation(g.ctx, own)
	if g.sub == nil {
		// The resolver refused: the member runs alone and meets the same refusal.
		cancel()
		return nil, fmt.Errorf("starting the group of a subscription: %w", errRefused)
	}
	go g.run()
	return g, nil
}

var errRefused = fmt.Errorf("the operation was refused")

// leave removes m; the last member to leave ends the group.
func (f *fanout) leave(m *member) {
	g := m.g
	f.mu.Lock()
	defer f.mu.Unlock()
	g.mu.Lock()
	delete(g.members, m)
	empty := len(g.members) == 0
	g.mu.Unlock()
	f.hub.Members(-1)
	if empty && f.groups[g.key] == g {
		delete(f.groups, g.key)
		g.cancel()
	}
}

// run executes and encodes each of the group's events once and queues it
// for every member, until the last member leaves.
func (g *group) run() {
	defer g.f.hub.Unsubscribe(g.sub)
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.sub.Dropped():
			// The group itself fell behind: its members may have lost events.
			g.dropAll("slow consumer: the subscription's group fell behind")
			return
		case d := <-g.sub.C:
			if d.Resync {
				g.broadcast(&shared{d: d})
				continue
			}
			id, version, ok := g.feed(d)
			if !ok {
				continue
			}
			resp := g.responses(g.respCtx)
			if resp == nil {
				return
			}
			resp.Data = bytes.Clone(resp.Data) // the executor reuses its buffer
			clean(resp.Errors)
			payload, err := json.Marshal(resp)
			if err != nil {
				g.dropAll("internal error: encoding an event")
				return
			}
			g.f.hub.Encoded(true)
			g.broadcast(&shared{d: d, id: id, version: version, resp: resp, payload: payload})
		}
	}
}

// broadcast queues s for every member without waiting: a member whose
// queue is full is dropped alone.
func (g *group) broadcast(s *shared) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var queued, dropped int
	for m := range g.members {
		select {
		case <-m.dropped:
		case m.q <- s:
			queued++
		default:
			m.drop("slow consumer: fell more than " + strconv.Itoa(g.f.buffer) + " events behind")
			dropped++
		}
	}
	if !s.d.Resync {
		g.f.hub.Queued(queued, dropped)
	}
}

func (g *group) dropAll(reason string) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for m := range g.members {
		m.drop(reason)
	}
	g.f.hub.Queued(0, len(g.members))
}

func (m *member) drop(reason string) {
	m.once.Do(func() {
		close(m.dropped)
		if m.onDrop != nil {
			go m.onDrop(reason)
		}
	})
}

// respond is the member's websocket response loop's next response: its
// own event executed by next, or, written here and told to written, the
// group's events, in order and each version once, until the next own
// event or the end; a group's event the member cannot write itself is
// returned as it is.
func (m *member) respond(ctx context.Context, next graphql.ResponseHandler, written func(*graphql.Response)) *graphql.Response {
	for {
		var q <-chan *shared
		if m.live {
			q = m.q
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.dropped:
			return nil
		case it := <-m.next:
			switch {
			case it.end:
				return nil
			case it.ready:
				m.live = true
				continue
			}
			m.g.f.hub.Encoded(false)
			m.out <- *it.own
			return next(ctx)
		case s := <-q:
			if m.frames == nil {
				if s.d.Resync {
					m.resyncing(s)
					continue
				}
				if m.fresh(s) {
					m.g.f.hub.Encoded(false) // gqlgen encodes it for this member
					return s.resp
				}
				continue
			}
			// What else is queued goes out with it, in one write to the
			// socket: a member behind catches up at less cost.
			m.batch = m.gather(append(m.batch[:0], s))
			if !m.write(m.batch, written) {
				return nil // the connection is closing
			}
		}
	}
}

// maxBatch bounds the events a member writes to its socket at once.
const maxBatch = 32

// gather appends to batch what else is queued, up to maxBatch events and
// no further than a resync.
func (m *member) gather(batch []*shared) []*shared {
	for len(batch) < maxBatch && !batch[len(batch)-1].d.Resync {
		select {
		case s := <-m.q:
			batch = append(batch, s)
		default:
			return batch
		}
	}
	return batch
}

// write writes the events of batch the member has not seen, and starts the
// snapshot a resync that ends it asks for; false when the connection
// failed. It keeps what it writes in batch's own array.
func (m *member) write(batch []*shared, written func(*graphql.Response)) bool {
	out := batch[:0]
	for _, s := range batch {
		if s.d.Resync {
			m.resyncing(s)
		} else if m.fresh(s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return true
	}
	if err := m.frames.write(out); err != nil {
		return false
	}
	for _, s := range out {
		written(s.resp)
	}
	return true
}

// fresh reports whether s is newer than what the member delivered of its
// instance, and takes it as delivered.
func (m *member) fresh(s *shared) bool {
	if s.version <= m.seen[s.id] {
		return false
	}
	m.seen[s.id] = s.version
	return true
}

// resyncing delivers the snapshot a resync asks for, which gives the
// turn back (ready) after it.
func (m *member) resyncing(s *shared) {
	m.live = false
	m.catchUp(s.d.Since, true)
}

// frames writes a member's shared responses as its websocket operation's
// messages: the group's encoding between the protocol's envelope, which
// gqlgen's transport would encode for every member again.
type frames struct {
	conn *guardedConn
	tail []byte // after the payload: the operation's id and the type
	buf  []byte
	msgs [][]byte
}

// newFrames returns the frames of ctx's websocket operation, or nil if
// it has no connection or no known id.
func newFrames(ctx context.Context) *frames {
	c := connFrom(ctx)
	id, ok := operationID(ctx)
	if c == nil || c.ws == nil || !ok {
		return nil
	}
	typ := "data" // graphql-ws
	if c.ws.Subprotocol() == "graphql-transport-ws" {
		typ = "next"
	}
	quoted, err := json.Marshal(id)
	if err != nil {
		return nil
	}
	tail := append(append([]byte(`,"id":`), quoted...), `,"type":"`+typ+`"}`...)
	return &frames{conn: c.ws, tail: tail}
}

// write writes events as the operation's messages, in one write to the
// socket.
func (f *frames) write(events []*shared) error {
	f.buf, f.msgs = f.buf[:0], f.msgs[:0]
	for _, s := range events {
		start := len(f.buf)
		f.buf = append(append(append(f.buf, `{"payload":`...), s.payload...), f.tail...)
		f.msgs = append(f.msgs, f.buf[start:])
	}
	return f.conn.WriteTexts(f.msgs)
}

// catchUp delivers, in a goroutine of its own that ends with it, the
// member's snapshot since since (all of it, at zero; none, without
// snapshot), then tells the response loop, which reads the group's
// events again after it.
func (m *member) catchUp(since time.Time, snapshot bool) {
	go func() {
		if snapshot && !m.snapshot(since) {
			m.send(m.ctx, item{end: true})
			return
		}
		m.send(m.ctx, item{ready: true})
	}()
}

// send hands the websocket's response loop its next item; false when the
// subscription ended.
func (m *member) send(ctx context.Context, it item) bool {
	select {
	case m.next <- it:
		return true
	case <-ctx.Done():
		return false
	}
}

// groupTenant is the hub tenant a group's scope sees: "" for operators.
func groupTenant(p *iam.Principal) string {
	if p.IsOperator() {
		return ""
	}
	return ids.Encode(ids.Tenant, p.TenantID)
}
