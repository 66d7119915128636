package hostcert

import (
	"net/http"
	"sync"
)

// Transport returns the HTTP transport of the daemon's requests to the
// gateway. A connection presents the certificate current at its
// handshake, so after a renewal the transport starts over with fresh
// connections (the old ones are closed once idle): no request goes out
// under a certificate that is about to expire.
func (id *Identity) Transport() http.RoundTripper {
	return &transport{id: id}
}

type transport struct {
	id *Identity

	mu  sync.Mutex
	cur *http.Transport
	gen uint64 // the identity's generation cur was made for
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	gen := t.id.generation()
	t.mu.Lock()
	if t.cur == nil || t.gen != gen {
		old := t.cur
		t.cur = http.DefaultTransport.(*http.Transport).Clone()
		t.cur.TLSClientConfig = t.id.ClientTLS()
		t.gen = gen
		if old != nil {
			old.CloseIdleConnections()
		}
	}
	cur := t.cur
	t.mu.Unlock()
	return cur.RoundTrip(req)
}
