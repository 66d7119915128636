package reconciler_test

import (
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/seal"
)

// hetznerProject is an emulated Hetzner Cloud project served on loopback.
type hetznerProject struct {
	*hetznertest.Emulator
	url string
}

// hetzner serves an emulated Hetzner Cloud project for the test; wrap, if
// given, stands in front of its handler.
func (e *env) hetzner(wrap func(http.Handler) http.Handler) *hetznerProject {
	e.t.Helper()
	em := hetznertest.New(hetznertest.Config{ActionDuration: 10 * time.Millisecond})
	var h http.Handler = em.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	return &hetznerProject{Emulator: em, url: srv.URL + "/v1"}
}

// sweeps returns how often the project's servers were listed.
func (p *hetznerProject) sweeps() int { return p.Faults().Calls()["GET /v1/servers"] }

// account registers a tenant's account on p with credentials.
func (e *env) account(name string, p *hetznerProject, credentials string) uuid.UUID {
	e.t.Helper()
	a, err := e.svc.CreateProviderAccount(e.ctx, control.ProviderAccountInput{TenantID: e.tenant, Name: name, Provider: control.ProviderHetzner,
		Credentials: credentials, Settings: map[string]any{"endpoint": p.url, "location": "fsn1"}})
	e.check(err)
	return a.ID
}

// providerPool makes a provider pool on account and makes it the one
// e.create uses, with a flavor and image Hetzner has.
func (e *env) providerPool(name string, account uuid.UUID) {
	e.t.Helper()
	p, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: name, Class: vps.ClassProvider, TenantID: e.tenant, ProviderAccountID: account})
	e.check(err)
	e.pool = p.ID
	_, err = e.db.Exec(e.ctx, `UPDATE flavors SET provider_types = '{"hetzner": "cx22"}'`)
	e.check(err)
	_, err = e.db.Exec(e.ctx, `UPDATE images SET provider_images = '{"hetzner": "debian-12"}'`)
	e.check(err)
}

// withProviders tunes a reconciler to reach the emulators (on loopback, as
// an operator would allow them) and sweep every 20 ms.
func withProviders(c *reconciler.Config) {
	sealer, _ := seal.New("test")
	c.Sealer = sealer
	c.Drivers = app.Drivers(app.DriverOptions{PollInterval: 10 * time.Millisecond,
		Endpoints: cloud.Endpoints{Hosts: []string{"127.0.0.1"}, AllowPrivate: true}})
	c.SweepInterval = 20 * time.Millisecond
}
