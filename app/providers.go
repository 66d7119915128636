package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/hetzner"
	"github.com/better-compute/vps/drivers/cloud/proxmox"
)

// DriverOptions tune every provider driver of a reconciler.
type DriverOptions struct {
	// PollInterval is how often actions and tasks are polled. Zero: the
	// driver's default (500ms).
	PollInterval time.Duration
	// Timeout bounds each request to a provider. Zero: the driver's
	// default (30s).
	Timeout time.Duration
	// ShutdownTimeout is how long a stop waits for an ACPI shutdown before
	// powering off. Zero: the driver's default (60s).
	ShutdownTimeout time.Duration
}

// Drivers returns the factory that makes a provider account's driver from
// its settings.
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
				Timeout: o.Timeout, PollInterval: o.PollInterval, ShutdownTimeout: o.ShutdownTimeout,
			})
		case control.ProviderProxmox:
			s, err := proxmox.ParseSettings(a.Settings)
			if err != nil {
				return nil, err
			}
			return proxmox.New(proxmox.Config{
				Endpoint: s.Endpoint, Token: a.Credentials, Node: s.Node, Storage: s.Storage, Template: s.Template,
				InsecureSkipVerify: s.Insecure,
				Timeout:            o.Timeout, PollInterval: o.PollInterval, ShutdownTimeout: o.ShutdownTimeout,
			})
		}
		return nil, fmt.Errorf("no driver for provider %q", a.Provider)
	}
}

// ProviderSettings are the checks control runs on a provider account's
// settings before it stores them: each driver's ParseSettings, whose
// errors become INVALID_INPUT on the setting at fault.
func ProviderSettings() map[string]func(json.RawMessage) error {
	return map[string]func(json.RawMessage) error{
		control.ProviderHetzner: settingsCheck(hetzner.ParseSettings),
		control.ProviderProxmox: settingsCheck(proxmox.ParseSettings),
	}
}

func settingsCheck[S any](parse func(json.RawMessage) (S, error)) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		_, err := parse(raw)
		if e := (*cloud.SettingsError)(nil); errors.As(err, &e) {
			return apierr.Invalid(e.Field, "%s", e.Message)
		}
		return err
	}
}
