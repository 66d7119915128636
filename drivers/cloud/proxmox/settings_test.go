package proxmox_test

import (
	"errors"
	"testing"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/proxmox"
)

// TestParseSettings: Proxmox needs an endpoint, a node, a storage and a
// template VMID; a fault names the setting.
func TestParseSettings(t *testing.T) {
	const base = `"endpoint": "https://pve.example.com:8006/api2/json", "node": "pve1", "storage": "local-lvm"`
	want := proxmox.Settings{Endpoint: "https://pve.example.com:8006/api2/json", Node: "pve1", Storage: "local-lvm", Template: 9000}
	insecure := want
	insecure.Insecure = true
	for _, c := range []struct {
		raw   string
		want  proxmox.Settings
		field string
	}{
		{`{` + base + `, "template": 9000}`, want, ""},
		{`{` + base + `, "template": 9000.0}`, want, ""},
		{`{` + base + `, "template": 9e3, "insecure": false}`, want, ""},
		{`{` + base + `, "template": 9000, "insecure": true}`, insecure, ""},
		{`{"endpoint": " https://pve.example.com:8006/api2/json ", "node": " pve1", "storage": "local-lvm ", "template": 9000}`, want, ""},
		{`{}`, proxmox.Settings{}, "settings.endpoint"},
		{`{"node": "pve1", "storage": "s", "template": 9000}`, proxmox.Settings{}, "settings.endpoint"},
		{`{"endpoint": "pve:8006", "node": "pve1", "storage": "s", "template": 9000}`, proxmox.Settings{}, "settings.endpoint"},
		{`{"endpoint": "https://pve:8006", "storage": "s", "template": 9000}`, proxmox.Settings{}, "settings.node"},
		{`{"endpoint": "https://pve:8006", "node": " ", "storage": "s", "template": 9000}`, proxmox.Settings{}, "settings.node"},
		{`{"endpoint": "https://pve:8006", "node": "n", "template": 9000}`, proxmox.Settings{}, "settings.storage"},
		{`{` + base + `}`, proxmox.Settings{}, "settings.template"},
		{`{` + base + `, "template": 5}`, proxmox.Settings{}, "settings.template"},
		{`{` + base + `, "template": 9000.5}`, proxmox.Settings{}, "settings.template"},
		{`{` + base + `, "template": "9000"}`, proxmox.Settings{}, "settings.template"},
		{`{` + base + `, "template": null}`, proxmox.Settings{}, "settings.template"},
		{`{` + base + `, "template": 9000, "insecure": "yes"}`, proxmox.Settings{}, "settings.insecure"},
		{`"x"`, proxmox.Settings{}, "settings"},
	} {
		got, err := proxmox.ParseSettings([]byte(c.raw))
		var e *cloud.SettingsError
		switch {
		case c.field == "" && (err != nil || got != c.want):
			t.Errorf("%s: %+v, %v; want %+v", c.raw, got, err, c.want)
		case c.field != "" && (!errors.As(err, &e) || e.Field != c.field):
			t.Errorf("%s: %v; want a fault of %s", c.raw, err, c.field)
		}
	}
	for raw, msg := range map[string]string{
		`{}`: "settings.endpoint: must be the API URL, such as https://pve.example.com:8006/api2/json",
		`{"endpoint": "https://pve:8006", "storage": "s"}`:              "settings.node: is required",
		`{"endpoint": "https://pve:8006", "node": "n", "storage": "s"}`: "settings.template: must be the VMID of the template to clone (100 or more)",
	} {
		if _, err := proxmox.ParseSettings([]byte(raw)); err == nil || err.Error() != msg {
			t.Errorf("%s: %v; want %q", raw, err, msg)
		}
	}
}
