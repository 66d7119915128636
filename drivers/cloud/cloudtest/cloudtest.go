// Package cloudtest is test support for the cloud drivers, as
// net/http/httptest is for net/http: it injects failures into a provider
// emulator's HTTP handler (hetzner/hetznertest, proxmox/proxmoxtest) and
// counts the calls it serves, so tests can show a driver backs off,
// retries and stays within its call budget.
package cloudtest

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault makes the next Count requests whose "METHOD /path" contains Match
// fail: after Delay (a stall longer than the client's timeout is a
// timeout), with Status and Body unless Status is zero (then the request is
// served normally after the delay).
type Fault struct {
	Match  string
	Count  int
	Delay  time.Duration
	Status int
	// Header is added to the failing response (e.g. Retry-After).
	Header http.Header
	// Body is the failing response's body, JSON in the provider's error shape.
	Body string
}

// Injector wraps a handler with faults and call counting.
type Injector struct {
	mu     sync.Mutex
	faults []*Fault
	calls  map[string]int
	total  int
	failed int
}

// New returns an Injector with no faults.
func New() *Injector {
	return &Injector{calls: map[string]int{}}
}

// Inject adds a fault.
func (in *Injector) Inject(f Fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.faults = append(in.faults, &f)
}

// Clear drops the faults not yet used up.
func (in *Injector) Clear() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.faults = nil
}

// Calls returns how many requests were received, by "METHOD route", where
// route is the path with numeric segments replaced by "{id}".
func (in *Injector) Calls() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]int, len(in.calls))
	for k, v := range in.calls {
		out[k] = v
	}
	return out
}

// Total returns how many requests were received and how many of them an
// injected fault failed.
func (in *Injector) Total() (total, failed int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.total, in.failed
}

// Reset zeroes the counters.
func (in *Injector) Reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls, in.total, in.failed = map[string]int{}, 0, 0
}

// Wrap returns next with the faults applied and calls counted.
func (in *Injector) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + Route(r.URL.Path)
		f := in.take(key)
		if f != nil && f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if f == nil || f.Status == 0 {
			next.ServeHTTP(w, r)
			return
		}
		for k, vs := range f.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		w.Write([]byte(f.Body))
	})
}

// take counts a request and returns the fault it meets, if any.
func (in *Injector) take(key string) *Fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls[key]++
	in.total++
	for i, f := range in.faults {
		if !strings.Contains(key, f.Match) {
			continue
		}
		f.Count--
		if f.Count <= 0 {
			in.faults = append(in.faults[:i], in.faults[i+1:]...)
		}
		if f.Status != 0 {
			in.failed++
		}
		return f
	}
	return nil
}

// Route replaces a path's numeric segments with "{id}" and Proxmox task
// IDs with "{upid}", so calls count by endpoint rather than by server.
func Route(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if _, err := strconv.Atoi(p); err == nil {
			parts[i] = "{id}"
		} else if strings.HasPrefix(p, "UPID:") {
			parts[i] = "{upid}"
		}
	}
	return strings.Join(parts, "/")
}
