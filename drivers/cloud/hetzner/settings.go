package hetzner

import (
	"encoding/json"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/better-compute/vps/drivers/cloud"
)

// Settings are a Hetzner Cloud account's settings, as its settings JSON
// holds them. Hetzner needs none.
type Settings struct {
	// Location is where servers are created (fsn1, nbg1, …). Empty: the
	// API picks.
	Location string `json:"location,omitempty"`
	// Endpoint is the API's base URL, ending in /v1, to reach another API
	// than api.hetzner.cloud (an emulator). Empty: hcloud-go's default.
	Endpoint string `json:"endpoint,omitempty"`
}

// ParseSettings decodes and checks an account's settings, a JSON object.
// A setting at fault is a *cloud.SettingsError naming it.
func ParseSettings(raw json.RawMessage) (Settings, error) {
	var s Settings
	f, err := cloud.SplitSettings(raw)
	if err != nil {
		return s, err
	}
	var ok bool
	if s.Location, ok = f.Text("location"); f.Has("location") && !ok {
		return s, cloud.InvalidSetting("location", "must be a location name such as fsn1")
	}
	if s.Endpoint, ok = f.URL("endpoint"); f.Has("endpoint") && !ok {
		return s, cloud.InvalidSetting("endpoint", "must be the API URL, such as https://api.hetzner.cloud/v1")
	}
	return s, nil
}

// PublicHost is the host of Hetzner Cloud's API: the default list of
// endpoints tenants' accounts may name has it (cloud.Endpoints).
const PublicHost = "api.hetzner.cloud"

// URL is the API base URL the account reaches: Endpoint, or hcloud-go's
// default.
func (s Settings) URL() string {
	if s.Endpoint == "" {
		return hcloud.Endpoint
	}
	return s.Endpoint
}
