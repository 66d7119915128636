package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// reportTap stands between a host daemon and its serve process and keeps
// the domains the host's runtime reports say it has, seen from
// outside the host process (the fake runtime keeps them in memory).
type reportTap struct {
	url string
	mu  sync.Mutex
	// domains are the instance IDs the reports so far make (a partial
	// one's on top of the whole one before it), and at when the last came.
	domains map[string]bool
	at      time.Time
}

// record takes a report's domains: a whole report's are the host's, a
// partial one's add to them and its absent instances leave.
func (tap *reportTap) record(rep hostproto.Report) {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if !rep.Partial || tap.domains == nil {
		tap.domains = map[string]bool{}
	}
	for _, in := range rep.Instances {
		tap.domains[in.ID] = true
	}
	for _, id := range rep.Absent {
		delete(tap.domains, id)
	}
	tap.at = time.Now()
}

// tapHost proxies to the serve process at target.
func tapHost(t testing.TB, target string) *reportTap {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a serve process killed is the campaign's doing
	tap := &reportTap{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == hostproto.ReportPath {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var rep hostproto.Report
			if json.Unmarshal(body, &rep) == nil {
				tap.record(rep)
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tap.url = srv.URL
	return tap
}

// last returns the host's domains as its reports say and when the last
// came.
func (tap *reportTap) last() ([]string, time.Time) {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return slices.Collect(maps.Keys(tap.domains)), tap.at
}
