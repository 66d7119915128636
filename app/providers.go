package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/hetzner"
	"github.com/better-compute/vps/drivers/cloud/proxmox"
)

// DriverOptions tune every provider driver of a reconciler.
type DriverOptions struct {
	// PollInterval is how often the tasks and actions a driver waits for
	// are polled (see each driver's doc for which it waits for). Zero: the
	// driver's default (500ms).
	PollInterval time.Duration
	// Timeout bounds each request to a provider. Zero: the driver's
	// default (30s).
	Timeout time.Duration
	// ShutdownTimeout is how long an ACPI shutdown has before the server
	// is powered off. Zero: the driver's default (60s).
	ShutdownTimeout time.Duration
	// Endpoints is the operator's policy on where accounts may send
	// requests (BC_PROVIDER_ENDPOINTS, BC_PROVIDER_ALLOW_PRIVATE), checked
	// when a driver is made and on every connection it opens. The zero
	// policy lets tenants' accounts name no host and no account reach a
	// non-public address.
	Endpoints cloud.Endpoints
}

// DefaultProviderEndpoints returns the hosts tenants' provider accounts
// may name by default: the providers' public API hosts. Proxmox VE has
// none; the operator lists a tenant's Proxmox.
func DefaultProviderEndpoints() []string { return []string{hetzner.PublicHost} }

// endpointer is a driver's settings, which name the endpoint they reach.
type endpointer interface{ URL() string }

// Drivers returns the factory that makes a provider account's driver from
// its settings. Each driver's requests go through the endpoint policy's
// transport: a connection it refuses (a host not listed for a tenant's
// account, an address not public) fails the call as Refused, which makes
// the instance ERROR and the account's sweeps back off. An account stored
// before the policy changed is held to the policy of now.
func Drivers(o DriverOptions) cloud.Factory {
	return func(a cloud.Account) (cloud.Driver, error) {
		switch a.Provider {
		case control.ProviderHetzner:
			s, err := hetzner.ParseSettings(a.Settings)
			if err != nil {
				return nil, err
			}
			return hetzner.New(hetzner.Config{
				Token: a.Credentials, Endpoint: s.Endpoint, Location: s.Location,
				HTTPClient: &http.Client{Transport: o.Endpoints.Transport(a.Shared)},
				Timeout:    o.Timeout, PollInterval: o.PollInterval, ShutdownTimeout: o.ShutdownTimeout,
			})
		case control.ProviderProxmox:
			s, err := proxmox.ParseSettings(a.Settings)
			if err != nil {
				return nil, err
			}
			return proxmox.New(proxmox.Config{
				Endpoint: s.Endpoint, Token: a.Credentials, Node: s.Node, Storage: s.Storage, Template: s.Template,
				InsecureSkipVerify: s.Insecure, Transport: o.Endpoints.Transport(a.Shared),
				Timeout: o.Timeout, PollInterval: o.PollInterval, ShutdownTimeout: o.ShutdownTimeout,
			})
		}
		return nil, fmt.Errorf("no driver for provider %q", a.Provider)
	}
}

// ProviderSettings are the checks control runs on a provider account's
// settings before it stores them: each driver's ParseSettings, then the
// endpoint policy on the endpoint they name. Their faults are
// INVALID_INPUT on the setting at fault (settings.endpoint for the
// policy's).
func ProviderSettings(policy cloud.Endpoints) map[string]control.ProviderSettingsCheck {
	return map[string]control.ProviderSettingsCheck{
		control.ProviderHetzner: settingsCheck(hetzner.ParseSettings, policy),
		control.ProviderProxmox: settingsCheck(proxmox.ParseSettings, policy),
	}
}

func settingsCheck[S endpointer](parse func(json.RawMessage) (S, error), policy cloud.Endpoints) control.ProviderSettingsCheck {
	return func(raw json.RawMessage, shared bool) error {
		s, err := parse(raw)
		if e := (*cloud.SettingsError)(nil); errors.As(err, &e) {
			return apierr.Invalid(e.Field, "%s", e.Message)
		}
		if err != nil {
			return err
		}
		if err := policy.Check(s.URL(), shared); err != nil {
			return apierr.Invalid("settings.endpoint", "%s", err.Error())
		}
		return nil
	}
}
