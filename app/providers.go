package app

import (
	"fmt"
	"strconv"
	"time"

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
		str := func(key string) string { s, _ := a.Settings[key].(string); return s }
		switch a.Provider {
		case control.ProviderHetzner:
			return hetzner.New(hetzner.Config{
				Token: a.Credentials, Endpoint: str("endpoint"), Location: str("location"),
				Timeout: o.Timeout, PollInterval: o.PollInterval, ShutdownTimeout: o.ShutdownTimeout,
			})
		case control.ProviderProxmox:
			template, err := strconv.Atoi(fmt.Sprint(a.Settings["template"]))
			if err != nil {
				return nil, fmt.Errorf("proxmox template %v: %w", a.Settings["template"], err)
			}
			insecure, _ := a.Settings["insecure"].(bool)
			return proxmox.New(proxmox.Config{
				Endpoint: str("endpoint"), Token: a.Credentials, Node: str("node"), Storage: str("storage"), Template: template,
				InsecureSkipVerify: insecure,
				Timeout:            o.Timeout, PollInterval: o.PollInterval, ShutdownTimeout: o.ShutdownTimeout,
			})
		}
		return nil, fmt.Errorf("no driver for provider %q", a.Provider)
	}
}
