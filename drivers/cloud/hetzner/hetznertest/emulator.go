// Package hetznertest emulates the part of the Hetzner Cloud API
// (docs.hetzner.cloud) that the hetzner driver beside it uses, statefully
// and in memory, so the real hcloud-go client can be driven against it in
// tests and in `better-compute dev`, as net/http/httptest serves net/http's
// clients. Its failures are injected with cloudtest (Emulator.Faults).
//
// Served under /v1:
//
//	POST   /v1/servers                          create (name, server_type, image, location,
//	                                            user_data, ssh_keys, labels, start_after_create)
//	GET    /v1/servers                          list (name, status, label_selector, page, per_page)
//	GET    /v1/servers/{id}
//	DELETE /v1/servers/{id}                     returns the delete_server action
//	POST   /v1/servers/{id}/actions/{command}   poweron, poweroff, shutdown, reboot
//	GET    /v1/actions?id=…&id=…                what hcloud-go's WaitFor polls
//	GET    /v1/actions/{id}
//	GET    /v1/ssh_keys                         list (name, fingerprint, label_selector, paging)
//	POST   /v1/ssh_keys
//	GET    /v1/ssh_keys/{id}
//	DELETE /v1/ssh_keys/{id}
//
// Server types, images and locations are known by name only (Config); the
// client sends names on create, so their list endpoints are not served.
//
// Time: every action runs for Config.ActionDuration (D) and then succeeds,
// on the clock Config.Now (a test may give a manual clock it advances itself).
// The states move lazily, computed when a request (or a test hook) looks,
// so the emulator starts no goroutines and needs no Close:
//
//	create, start_after_create   initializing; starting at D; running at 2D
//	create, no start             initializing; off at D
//	poweron                      starting; running at D
//	shutdown                     stopping; off at 2D (the action succeeds at D,
//	                             when the ACPI signal is delivered); with
//	                             IgnoreShutdown the guest keeps running
//	poweroff                     stopping; off at D
//	delete                       deleting; gone at D
//
// A server with a running action is locked: another power action on it gets
// 423 locked (delete is always accepted). Power actions that change nothing
// (poweron of a running server) succeed after D.
//
// Every response carries RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset from a token bucket; an empty bucket answers 429
// rate_limit_exceeded with Retry-After. Errors have the documented body
// {"error":{"code","message","details"}}.
package hetznertest

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/better-compute/vps/drivers/cloud/cloudtest"
)

// DefaultToken is the API token the emulator accepts when Config.Token is
// empty.
const DefaultToken = "emulator-token"

// Config configures an Emulator. The zero Config is usable; defaults are
// applied by withDefaults.
type Config struct {
	// Token is the only bearer token accepted; any other request gets 401
	// unauthorized. Empty: DefaultToken.
	Token string
	// ActionDuration is how long an action stays running before it
	// succeeds; the server states follow it (see the package doc).
	// Zero: 50ms.
	ActionDuration time.Duration
	// ServerLimit is how many servers the project may have; creating one
	// more fails with 403 resource_limit_exceeded. Zero: 1000.
	ServerLimit int
	// RateLimit is the size of the rate-limit token bucket, in requests.
	// Zero: 3600, as at Hetzner.
	RateLimit int
	// RefillPerSecond is how many tokens flow back into the bucket each
	// second. Zero: 1, as at Hetzner.
	RefillPerSecond float64
	// Locations are the location names servers may be created in; the
	// first is used when a create names none. Empty: fsn1, nbg1, hel1, ash,
	// hil, sin.
	Locations []string
	// ServerTypes are the known server type names. Empty: cx22, cx32, cx42,
	// cx52, cpx11, cpx21, cpx31, cax11.
	ServerTypes []string
	// Images are the known image names. Empty: ubuntu-22.04, ubuntu-24.04,
	// debian-11, debian-12, fedora-41, rocky-9.
	Images []string
	// IgnoreShutdown makes the guests ignore ACPI shutdown: the shutdown
	// action succeeds but the server keeps running (SetIgnoreShutdown
	// changes it later).
	IgnoreShutdown bool
	// Now is the emulator's clock, from which actions and states move and
	// the rate-limit bucket refills. Nil: time.Now. Tests that look at a
	// state lasting only ActionDuration give a manual clock
	// (testenv.Clock) and advance it.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Token == "" {
		c.Token = DefaultToken
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ActionDuration <= 0 {
		c.ActionDuration = 50 * time.Millisecond
	}
	if c.ServerLimit <= 0 {
		c.ServerLimit = 1000
	}
	if c.RateLimit <= 0 {
		c.RateLimit = 3600
	}
	if c.RefillPerSecond <= 0 {
		c.RefillPerSecond = 1
	}
	if len(c.Locations) == 0 {
		c.Locations = []string{"fsn1", "nbg1", "hel1", "ash", "hil", "sin"}
	}
	if len(c.ServerTypes) == 0 {
		c.ServerTypes = []string{"cx22", "cx32", "cx42", "cx52", "cpx11", "cpx21", "cpx31", "cax11"}
	}
	if len(c.Images) == 0 {
		c.Images = []string{"ubuntu-22.04", "ubuntu-24.04", "debian-11", "debian-12", "fedora-41", "rocky-9"}
	}
	c.Locations = append([]string(nil), c.Locations...)
	c.ServerTypes = append([]string(nil), c.ServerTypes...)
	c.Images = append([]string(nil), c.Images...)
	return c
}

// Emulator is an in-memory Hetzner Cloud project. It is safe for concurrent
// use.
type Emulator struct {
	cfg     Config
	faults  *cloudtest.Injector
	handler http.Handler

	mu             sync.Mutex
	now            func() time.Time
	serverLimit    int
	ignoreShutdown bool
	bucket         bucket
	servers        map[int64]*server
	actions        map[int64]*action
	sshKeys        map[int64]*sshKey
	events         []event
	seq            int64
	nextServer     int64
	nextAction     int64
	nextKey        int64
	nextRequest    int64
}

// New returns an empty project configured by cfg.
func New(cfg Config) *Emulator {
	cfg = cfg.withDefaults()
	now := cfg.Now
	e := &Emulator{
		cfg:            cfg,
		faults:         cloudtest.New(),
		now:            now,
		serverLimit:    cfg.ServerLimit,
		ignoreShutdown: cfg.IgnoreShutdown,
		bucket:         newBucket(cfg.RateLimit, cfg.RefillPerSecond, now()),
		servers:        map[int64]*server{},
		actions:        map[int64]*action{},
		sshKeys:        map[int64]*sshKey{},
		nextServer:     4711000,
		nextAction:     9100000,
		nextKey:        2300,
	}
	e.handler = e.faults.Wrap(e.routes())
	return e
}

// Handler serves the API at /v1/..., behind the fault injector.
func (e *Emulator) Handler() http.Handler { return e.handler }

// Faults is the injector in front of the API: inject failures with it and
// read the call counts ("METHOD /v1/servers/{id}") from it. ErrorBody makes
// a failure's body in Hetzner's shape.
func (e *Emulator) Faults() *cloudtest.Injector { return e.faults }

// ServerView is a server as the test hooks show it.
type ServerView struct {
	ID         int64
	Name       string
	Status     string
	Labels     map[string]string
	ServerType string
	Image      string
	Location   string
	UserData   string
	// SSHKeys are the names of the SSH key resources it was created with.
	SSHKeys []string
}

// Servers returns the project's servers, by ID, with their states brought
// up to date.
func (e *Emulator) Servers() []ServerView {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	out := make([]ServerView, 0, len(e.servers))
	for _, s := range e.sortedServers() {
		v := ServerView{
			ID: s.id, Name: s.name, Status: s.status, Labels: copyLabels(s.labels),
			ServerType: s.serverType, Image: s.image, Location: s.location, UserData: s.userData,
		}
		for _, id := range s.sshKeys {
			if k, ok := e.sshKeys[id]; ok {
				v.SSHKeys = append(v.SSHKeys, k.name)
			}
		}
		out = append(out, v)
	}
	return out
}

// SSHKeyView is an SSH key resource as the test hooks show it.
type SSHKeyView struct {
	ID          int64
	Name        string
	Fingerprint string
	Labels      map[string]string
}

// SSHKeys returns the project's SSH key resources, by ID.
func (e *Emulator) SSHKeys() []SSHKeyView {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]SSHKeyView, 0, len(e.sshKeys))
	for _, k := range e.sshKeys {
		out = append(out, SSHKeyView{ID: k.id, Name: k.name, Fingerprint: k.fingerprint, Labels: copyLabels(k.labels)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// DeleteServer removes a server at once, behind the client's back (as if
// deleted in the console). It reports whether the server existed.
func (e *Emulator) DeleteServer(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	s, ok := e.servers[id]
	if ok {
		e.removeServer(s)
	}
	return ok
}

// AddServer makes a running server behind the client's back (as if created
// in the console), in the first location with the first server type and
// image, and returns its ID. It fails if the name is taken; it ignores the
// server limit.
func (e *Emulator) AddServer(name string, labels map[string]string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	if e.nameTaken(name) {
		return 0, fmt.Errorf("server name %q is already used", name)
	}
	s := e.newServer(name, e.cfg.ServerTypes[0], e.cfg.Images[0], e.cfg.Locations[0], copyLabels(labels))
	s.status = statusRunning
	return s.id, nil
}

// SetServerLimit changes the project's server limit.
func (e *Emulator) SetServerLimit(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.serverLimit = n
}

// SetIgnoreShutdown changes whether guests ignore ACPI shutdown.
func (e *Emulator) SetIgnoreShutdown(ignore bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ignoreShutdown = ignore
}
