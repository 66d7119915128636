package proxmox

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/better-compute/vps/drivers/cloud"
)

// Settings are a Proxmox VE account's settings, as its settings JSON holds
// them.
type Settings struct {
	// Endpoint is the API URL, such as
	// https://pve.example.com:8006/api2/json. Required.
	Endpoint string `json:"endpoint"`
	// Node is the node VMs are cloned on. Required.
	Node string `json:"node"`
	// Storage is where the clones' disks go. Required.
	Storage string `json:"storage"`
	// Template is the VMID of the template cloned when an image names none
	// (100 or more). Required.
	Template int `json:"template"`
	// Insecure turns off TLS certificate verification, for a lab node's
	// self-signed certificate.
	Insecure bool `json:"insecure,omitempty"`
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
	if s.Endpoint, ok = f.URL("endpoint"); !ok {
		return s, cloud.InvalidSetting("endpoint", "must be the API URL, such as https://pve.example.com:8006/api2/json")
	}
	if s.Node, ok = f.Text("node"); !ok {
		return s, cloud.InvalidSetting("node", "is required")
	}
	if s.Storage, ok = f.Text("storage"); !ok {
		return s, cloud.InvalidSetting("storage", "is required")
	}
	if s.Template, ok = wholeNumber(f["template"]); !ok || s.Template < 100 {
		return s, cloud.InvalidSetting("template", "must be the VMID of the template to clone (100 or more)")
	}
	if raw, given := f["insecure"]; given && json.Unmarshal(raw, &s.Insecure) != nil {
		return s, cloud.InvalidSetting("insecure", "must be true or false")
	}
	return s, nil
}

// wholeNumber reads a JSON number that is a whole one (9000, 9000.0, 9e3).
func wholeNumber(raw json.RawMessage) (int, bool) {
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
		return 0, false // json.Number takes a quoted number too
	}
	var n json.Number
	if len(raw) == 0 || json.Unmarshal(raw, &n) != nil || n == "" {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return int(i), true
	}
	f, err := n.Float64()
	return int(f), err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53
}

// URL is the API URL the account reaches: Endpoint.
func (s Settings) URL() string { return s.Endpoint }
