// Package hetzner is the cloud.Driver of Hetzner Cloud, on hcloud-go.
//
// hcloud-go's own retries are off: every method makes its calls once and
// returns a classified cloud.Error (errors.go), and the reconciler backs
// off, counting the calls. Each request has its own timeout
// (Config.Timeout). Calls in the normal case:
//
//	Create   1 POST /servers (plus 1–2 per SSH key when the keys must be
//	         key resources, see sshkeys.go); it does not wait for the
//	         server to run, only checks the create action did not fail.
//	List     1 GET /servers?label_selector=…&per_page=50 per 50 servers.
//	Find     1 GET /servers?label_selector=…=<instance ID>.
//	FindBootstrap  the same, by cloud.BootstrapLabel.
//	Start    1 POST poweron; none while a start it asked is under way.
//	Stop     1 POST shutdown; none while that shutdown is under way
//	         (ShutdownTimeout); after it, 1 POST poweroff.
//	Delete   1 DELETE + 1 GET /actions/{id} per PollInterval until the
//	         action finishes; a server already gone is success.
//
// Create, Start and Stop do not wait for their actions: the actions the
// API returns are checked for an error they already have, and the sweep's
// next List sees the server running or off (cloud.Asked). Each costs one
// call, not one plus a poll per PollInterval. Delete waits: the instance's
// quota is released when it returns, and the server must no longer count
// against the project's limit by then.
//
// SSH keys: with empty user data they go into a generated #cloud-config
// (ssh_authorized_keys), costing no call; with any other user data, which
// is never rewritten, they become Hetzner SSH key resources (named by
// fingerprint, labelled SSHKeyLabel, reused), which Hetzner hands to the
// server through its metadata service. Keys with authorized_keys options
// are refused as Invalid.
package hetzner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/better-compute/vps/drivers/cloud"
)

// Config configures a Driver for one Hetzner Cloud project.
type Config struct {
	// Token is the project's API token. Required.
	Token string
	// Endpoint is the API's base URL, ending in /v1. Empty: hcloud-go's
	// default (https://api.hetzner.cloud/v1).
	Endpoint string
	// Location is where servers are created (fsn1, nbg1, …). Empty: the
	// API picks.
	Location string
	// HTTPClient sends the requests. Nil: a new http.Client. It is copied;
	// its Timeout is replaced by Timeout.
	HTTPClient *http.Client
	// Timeout bounds each request. Zero: 30s.
	Timeout time.Duration
	// PollInterval is the first wait before polling a delete action
	// again; later waits grow (see pollGap). Zero: 500ms.
	PollInterval time.Duration
	// ShutdownTimeout is how long an ACPI shutdown has before a Stop
	// called again powers the server off, and how long a Start is taken
	// to be under way. Zero: 60s.
	ShutdownTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = hcloud.Endpoint
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 60 * time.Second
	}
	return c
}

// Driver is the cloud.Driver of one Hetzner Cloud project. It is safe
// for concurrent use.
type Driver struct {
	cfg    Config
	client *hcloud.Client

	mu     sync.Mutex
	budget cloud.Budget
	// asked are the power changes under way (Start, Stop).
	asked cloud.Asked
}

var _ cloud.Driver = (*Driver)(nil)

// New returns a Driver for cfg.
func New(cfg Config) (*Driver, error) {
	if cfg.Token == "" {
		return nil, errors.New("hetzner: a token is required")
	}
	for _, c := range []byte(cfg.Token) {
		if c < 0x20 || c == 0x7f {
			// Not the token itself: errors must never show it.
			return nil, errors.New("hetzner: the token contains invalid characters")
		}
	}
	cfg = cfg.withDefaults()
	d := &Driver{cfg: cfg}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.Timeout = cfg.Timeout
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = &budgetTransport{next: next, d: d}
	d.client = hcloud.NewClient(
		hcloud.WithToken(cfg.Token),
		hcloud.WithEndpoint(cfg.Endpoint),
		hcloud.WithHTTPClient(hc),
		hcloud.WithApplication("better-compute", ""),
		// No retries: the reconciler retries, and a 429 must reach it.
		hcloud.WithRetryOpts(hcloud.RetryOpts{BackoffFunc: hcloud.ConstantBackoff(0), MaxRetries: 0}),
	)
	return d, nil
}

// Create makes a server for req, labelled with the instance ID, and returns
// it as created (initializing); it does not wait for it to run.
func (d *Driver) Create(ctx context.Context, req cloud.CreateRequest) (cloud.Server, error) {
	label, owner := cloud.Label, req.InstanceID
	if req.BootstrapID != "" {
		label, owner = cloud.BootstrapLabel, req.BootstrapID
	}
	switch {
	case (req.InstanceID == "") == (req.BootstrapID == ""):
		return cloud.Server{}, invalid("exactly one of the instance ID and the bootstrap ID is required")
	case req.SeedURL != "":
		return cloud.Server{}, invalid("a NoCloud seed URL is not needed on Hetzner Cloud: give the user data")
	case req.Name == "":
		return cloud.Server{}, invalid("the server name is required")
	case req.ServerType == "":
		return cloud.Server{}, invalid("the server type is required")
	case req.Image == "":
		return cloud.Server{}, invalid("the image is required")
	}
	userData, keys, err := d.sshKeys(ctx, req.SSHKeys, req.UserData)
	if err != nil {
		return cloud.Server{}, err
	}
	power := req.PowerOn
	opts := hcloud.ServerCreateOpts{
		Name:             req.Name,
		ServerType:       &hcloud.ServerType{Name: req.ServerType},
		Image:            &hcloud.Image{Name: req.Image},
		SSHKeys:          keys,
		UserData:         userData,
		StartAfterCreate: &power,
		Labels:           map[string]string{label: owner},
	}
	if d.cfg.Location != "" {
		opts.Location = &hcloud.Location{Name: d.cfg.Location}
	}
	res, resp, err := d.client.Server.Create(ctx, opts)
	if err != nil {
		return cloud.Server{}, classify(err, resp)
	}
	for _, a := range append([]*hcloud.Action{res.Action}, res.NextActions...) {
		if err := actionError(a); err != nil {
			return cloud.Server{}, err
		}
	}
	if res.Server == nil {
		return cloud.Server{}, &cloud.Error{Kind: cloud.Retryable, Message: "the create response has no server"}
	}
	return toServer(res.Server), nil
}

// List returns the servers labelled with an instance ID: one call per 50
// servers (the API's largest page).
func (d *Driver) List(ctx context.Context) ([]cloud.Server, error) {
	return d.list(ctx, cloud.Label)
}

// Find returns the servers labelled with instanceID: one call.
func (d *Driver) Find(ctx context.Context, instanceID string) ([]cloud.Server, error) {
	if instanceID == "" {
		return nil, invalid("the instance ID is required")
	}
	return d.list(ctx, cloud.Label+"="+instanceID)
}

// FindBootstrap returns the servers labelled with bootstrapID: one call.
func (d *Driver) FindBootstrap(ctx context.Context, bootstrapID string) ([]cloud.Server, error) {
	if bootstrapID == "" {
		return nil, invalid("the bootstrap ID is required")
	}
	return d.list(ctx, cloud.BootstrapLabel+"="+bootstrapID)
}

// list returns the servers matching a label selector, 50 a call.
func (d *Driver) list(ctx context.Context, selector string) ([]cloud.Server, error) {
	opts := hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: selector, PerPage: 50, Page: 1}}
	out := []cloud.Server{}
	for {
		servers, resp, err := d.client.Server.List(ctx, opts)
		if err != nil {
			return nil, classify(err, resp)
		}
		for _, s := range servers {
			out = append(out, toServer(s))
		}
		if resp.Meta.Pagination == nil || resp.Meta.Pagination.NextPage <= opts.Page {
			return out, nil
		}
		opts.Page = resp.Meta.Pagination.NextPage
	}
}

// Start powers the server on and returns it starting, without waiting for
// the action: the next List shows it running. Hetzner never gives a
// deleted server's ID again, so calls by ID need no label check.
func (d *Driver) Start(ctx context.Context, ref cloud.Ref) (cloud.Status, error) {
	srv, err := parseID(ref.ID)
	if err != nil {
		return "", err
	}
	if ago, ok := d.asked.Since(ref.ID, cloud.StatusStarting); ok && ago < d.cfg.ShutdownTimeout {
		return cloud.StatusStarting, nil
	}
	a, resp, err := d.client.Server.Poweron(ctx, srv)
	if err != nil {
		return "", classify(err, resp)
	}
	if err := actionError(a); err != nil {
		return "", err
	}
	d.asked.Ask(ref.ID, cloud.StatusStarting)
	return cloud.StatusStarting, nil
}

// Stop shuts the server down by ACPI and returns it stopping, without
// waiting: the next List shows it off. Called again within
// ShutdownTimeout of the shutdown it makes no call; called after, it
// powers the server off.
func (d *Driver) Stop(ctx context.Context, ref cloud.Ref) (cloud.Status, error) {
	srv, err := parseID(ref.ID)
	if err != nil {
		return "", err
	}
	ago, asked := d.asked.Since(ref.ID, cloud.StatusStopping)
	if asked && ago < d.cfg.ShutdownTimeout {
		return cloud.StatusStopping, nil
	}
	power := d.client.Server.Shutdown
	if asked {
		power = d.client.Server.Poweroff // the guest ignored the shutdown
	}
	a, resp, err := power(ctx, srv)
	if err != nil {
		return "", classify(err, resp)
	}
	if err := actionError(a); err != nil {
		return "", err
	}
	d.asked.Ask(ref.ID, cloud.StatusStopping)
	return cloud.StatusStopping, nil
}

// Reboot asks for an ACPI reboot of the server and waits for the action.
func (d *Driver) Reboot(ctx context.Context, ref cloud.Ref) error {
	srv, err := parseID(ref.ID)
	if err != nil {
		return err
	}
	a, resp, err := d.client.Server.Reboot(ctx, srv)
	if err != nil {
		return classify(err, resp)
	}
	return d.wait(ctx, a)
}

// Delete deletes the server and waits for the action, so that what the
// server counted against the project is free when it returns; a server
// that is gone is deleted.
func (d *Driver) Delete(ctx context.Context, ref cloud.Ref) error {
	srv, err := parseID(ref.ID)
	if err != nil {
		return err
	}
	res, resp, err := d.client.Server.DeleteWithResult(ctx, srv)
	if err != nil {
		if hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
			return nil
		}
		return classify(err, resp)
	}
	d.asked.Forget(ref.ID)
	return d.wait(ctx, res.Action)
}

// Budget is the rate limit the last response stated.
func (d *Driver) Budget() cloud.Budget {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.budget
}

// actionError is the error of an action the API returned already failed.
func actionError(a *hcloud.Action) error {
	if a == nil {
		return nil
	}
	if err := a.Error(); err != nil {
		return classify(err, nil)
	}
	return nil
}

// wait polls the action until it finishes (see pollGap). It polls
// GET /actions/{id} itself, rather than with hcloud-go's WaitFor, to keep
// each response for classifying its error.
func (d *Driver) wait(ctx context.Context, a *hcloud.Action) error {
	if a == nil {
		return nil
	}
	for n := 0; a.Status == hcloud.ActionStatusRunning; n++ {
		if err := sleep(ctx, d.pollGap(n)); err != nil {
			return err
		}
		got, resp, err := d.client.Action.GetByID(ctx, a.ID)
		if err != nil {
			return classify(err, resp)
		}
		if got == nil {
			return &cloud.Error{Kind: cloud.Retryable, Message: fmt.Sprintf("action %d not found", a.ID)}
		}
		a = got
	}
	if err := a.Error(); err != nil {
		return classify(err, nil)
	}
	return nil
}

// pollGap is the wait before the nth poll of something slow: PollInterval,
// growing by half each time up to ten times it, so that waiting on a slow
// action spends few of the project's 3,600 requests an hour.
func (d *Driver) pollGap(n int) time.Duration {
	gap := d.cfg.PollInterval
	for range min(n, 6) { // 1.5^6 ≈ 11
		gap += gap / 2
	}
	return min(gap, 10*d.cfg.PollInterval)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return classify(ctx.Err(), nil)
	}
}

func parseID(serverID string) (*hcloud.Server, error) {
	id, err := strconv.ParseInt(serverID, 10, 64)
	if err != nil || id <= 0 {
		return nil, invalid(fmt.Sprintf("%q is not a Hetzner server ID", serverID))
	}
	return &hcloud.Server{ID: id}, nil
}

func toServer(s *hcloud.Server) cloud.Server {
	out := cloud.Server{
		ID:          strconv.FormatInt(s.ID, 10),
		InstanceID:  s.Labels[cloud.Label],
		BootstrapID: s.Labels[cloud.BootstrapLabel],
		Status:      toStatus(s.Status),
	}
	if v4 := s.PublicNet.IPv4; !v4.IsUnspecified() {
		out.Addresses = append(out.Addresses, v4.IP.String())
	}
	if v6 := s.PublicNet.IPv6; !v6.IsUnspecified() {
		out.Addresses = append(out.Addresses, ipv6Host(v6).String())
	}
	return out
}

// ipv6Host is the server's address in its /64: Hetzner's images configure
// the network's ::1.
func ipv6Host(v6 hcloud.ServerPublicNetIPv6) net.IP {
	if v6.Network == nil {
		return v6.IP
	}
	ip := make(net.IP, net.IPv6len)
	copy(ip, v6.Network.IP.To16())
	ip[net.IPv6len-1] |= 1
	return ip
}

func toStatus(s hcloud.ServerStatus) cloud.Status {
	switch s {
	case hcloud.ServerStatusInitializing, hcloud.ServerStatusStarting:
		return cloud.StatusStarting
	case hcloud.ServerStatusRunning:
		return cloud.StatusRunning
	case hcloud.ServerStatusStopping:
		return cloud.StatusStopping
	case hcloud.ServerStatusOff:
		return cloud.StatusStopped
	case hcloud.ServerStatusDeleting:
		return cloud.StatusDeleting
	default:
		return cloud.StatusUnknown
	}
}
