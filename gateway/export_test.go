package gateway

import (
	"net/http"
	"time"
)

// ServeReportWithCertificate serves a report request whose host (found by
// its bearer credential, as always) also presented a client certificate
// valid until notAfter, as the mutual-TLS authentication hands it to the
// report handler, for the tests outside the package.
func ServeReportWithCertificate(g *Gateway, w http.ResponseWriter, r *http.Request, version int, notAfter time.Time) {
	g.authenticated(version, func(w http.ResponseWriter, r *http.Request, host authenticatedHost, version int) {
		host.CertNotAfter = &notAfter
		g.report(w, r, host, version)
	})(w, r)
}
