package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// reportTap stands between a host daemon and its serve process and keeps
// the host's last runtime report: the domains its runtime has, seen from
// outside the host process (the fake runtime keeps them in memory).
type reportTap struct {
	url string
	mu  sync.Mutex
	// domains are the instance IDs of the last report, and at when it came.
	domains []string
	at      time.Time
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
				ids := make([]string, 0, len(rep.Instances))
				for _, in := range rep.Instances {
					ids = append(ids, in.ID)
				}
				tap.mu.Lock()
				tap.domains, tap.at = ids, time.Now()
				tap.mu.Unlock()
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tap.url = srv.URL
	return tap
}

// last returns the domains of the last report and when it came.
func (tap *reportTap) last() ([]string, time.Time) {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return tap.domains, tap.at
}
