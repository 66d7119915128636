package hetzner

import (
	"net/http"
	"strconv"
	"time"

	"github.com/better-compute/vps/drivers/cloud"
)

// budgetTransport records the RateLimit-* headers of every response,
// including those of action polls and of errors, as the Driver's Budget.
type budgetTransport struct {
	next http.RoundTripper
	d    *Driver
}

func (t *budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		if b, ok := parseBudget(resp.Header); ok {
			t.d.mu.Lock()
			t.d.budget = b
			t.d.mu.Unlock()
		}
	}
	return resp, err
}

// parseBudget reads the RateLimit-* headers; ok is false when the response
// states no limit (an error from a proxy in between).
func parseBudget(h http.Header) (cloud.Budget, bool) {
	limit, err := strconv.Atoi(h.Get("RateLimit-Limit"))
	if err != nil {
		return cloud.Budget{}, false
	}
	b := cloud.Budget{Limit: limit}
	if v, err := strconv.Atoi(h.Get("RateLimit-Remaining")); err == nil {
		b.Remaining = v
	}
	if v, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil {
		b.Reset = time.Unix(v, 0)
	}
	return b, true
}
