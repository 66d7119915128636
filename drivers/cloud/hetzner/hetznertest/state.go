package hetznertest

import (
	"fmt"
	"maps"
	"sort"
	"time"
)

// Server statuses, as the API spells them.
const (
	statusInitializing = "initializing"
	statusStarting     = "starting"
	statusRunning      = "running"
	statusStopping     = "stopping"
	statusOff          = "off"
	statusDeleting     = "deleting"
)

// Action statuses.
const (
	actionRunning = "running"
	actionSuccess = "success"
)

type server struct {
	id         int64
	name       string
	status     string
	created    time.Time
	labels     map[string]string
	serverType string
	image      string
	location   string
	userData   string
	sshKeys    []int64
	ipv4       string
	ipv6       string // the server's /64
	// locks counts the running actions on the server; it is locked while
	// any runs.
	locks int
	gone  bool
}

type action struct {
	id       int64
	command  string
	status   string
	progress int
	started  time.Time
	finished time.Time
	server   int64
}

type sshKey struct {
	id          int64
	name        string
	fingerprint string
	publicKey   string
	labels      map[string]string
	created     time.Time
}

// event is a state change due at a time; advance applies the due ones in
// order.
type event struct {
	at    time.Time
	seq   int64
	apply func(at time.Time)
}

// schedule adds an event due after d. Call with e.mu held.
func (e *Emulator) schedule(d time.Duration, apply func(at time.Time)) {
	e.seq++
	ev := event{at: e.now().Add(d), seq: e.seq, apply: apply}
	i := sort.Search(len(e.events), func(i int) bool {
		o := e.events[i]
		return o.at.After(ev.at) || (o.at.Equal(ev.at) && o.seq > ev.seq)
	})
	e.events = append(e.events, event{})
	copy(e.events[i+1:], e.events[i:])
	e.events[i] = ev
}

// advance applies the events that are due. Call with e.mu held.
func (e *Emulator) advance() {
	now := e.now()
	for len(e.events) > 0 && !e.events[0].at.After(now) {
		ev := e.events[0]
		e.events = e.events[1:]
		ev.apply(ev.at)
	}
}

// startAction starts a running action on s that succeeds after d, calling
// done then (unless the server is gone by then). Call with e.mu held.
func (e *Emulator) startAction(command string, s *server, d time.Duration, done func()) *action {
	e.nextAction++
	a := &action{id: e.nextAction, command: command, status: actionRunning, started: e.now(), server: s.id}
	e.actions[a.id] = a
	s.locks++
	e.schedule(d, func(at time.Time) {
		a.status, a.progress, a.finished = actionSuccess, 100, at
		s.locks--
		if !s.gone && done != nil {
			done()
		}
	})
	return a
}

func (e *Emulator) newServer(name, serverType, image, location string, labels map[string]string) *server {
	e.nextServer++
	n := e.nextServer
	if labels == nil {
		labels = map[string]string{}
	}
	s := &server{
		id: n, name: name, status: statusInitializing, created: e.now().UTC().Truncate(time.Second),
		labels: labels, serverType: serverType, image: image, location: location,
		// Documentation ranges: 198.18.0.0/15 and 2001:db8::/32.
		ipv4: fmt.Sprintf("198.%d.%d.%d", 18+(n>>16)&1, (n>>8)&0xff, n&0xff),
		ipv6: fmt.Sprintf("2001:db8:%x:%x::/64", (n>>16)&0xffff, n&0xffff),
	}
	e.servers[s.id] = s
	return s
}

func (e *Emulator) removeServer(s *server) {
	s.gone = true
	delete(e.servers, s.id)
}

func (e *Emulator) nameTaken(name string) bool {
	for _, s := range e.servers {
		if s.name == name {
			return true
		}
	}
	return false
}

func (e *Emulator) sortedServers() []*server {
	out := make([]*server, 0, len(e.servers))
	for _, s := range e.servers {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// createServer makes a server and starts its create_server action (and
// start_server, when start). Call with e.mu held.
func (e *Emulator) createServer(name, serverType, image, location, userData string, keys []int64, labels map[string]string, start bool) (*server, *action, []*action) {
	d := e.cfg.ActionDuration
	s := e.newServer(name, serverType, image, location, labels)
	s.userData, s.sshKeys = userData, keys
	create := e.startAction("create_server", s, d, func() {
		if start {
			s.status = statusStarting
		} else {
			s.status = statusOff
		}
	})
	var next []*action
	if start {
		next = append(next, e.startAction("start_server", s, 2*d, func() { s.status = statusRunning }))
	}
	return s, create, next
}

// power starts a power action on s. Call with e.mu held.
func (e *Emulator) power(command string, s *server) *action {
	d := e.cfg.ActionDuration
	switch command {
	case "poweron":
		if s.status == statusOff || s.status == statusStopping {
			s.status = statusStarting
			return e.startAction("start_server", s, d, func() { s.status = statusRunning })
		}
		return e.startAction("start_server", s, d, nil)
	case "reboot":
		// An ACPI reboot: a running guest restarts and stays running.
		return e.startAction("reboot_server", s, d, nil)
	case "poweroff":
		if s.status != statusOff {
			s.status = statusStopping
			return e.startAction("stop_server", s, d, func() { s.status = statusOff })
		}
		return e.startAction("stop_server", s, d, nil)
	default: // shutdown
		if s.status == statusRunning && !e.ignoreShutdown {
			s.status = statusStopping
			a := e.startAction("shutdown_server", s, d, nil)
			e.schedule(2*d, func(time.Time) {
				if !s.gone && s.status == statusStopping {
					s.status = statusOff
				}
			})
			return a
		}
		return e.startAction("shutdown_server", s, d, nil)
	}
}

// deleteServer starts deleting s. Call with e.mu held.
func (e *Emulator) deleteServer(s *server) *action {
	s.status = statusDeleting
	a := e.startAction("delete_server", s, e.cfg.ActionDuration, func() { e.removeServer(s) })
	return a
}

func copyLabels(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}
