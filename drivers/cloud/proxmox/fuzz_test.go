package proxmox_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/better-compute/vps/drivers/cloud/proxmox"
	"github.com/better-compute/vps/internal/text"
)

// FuzzParseSettings: settings that parse are ones the API can store and the
// driver can use (text without NUL or control characters, an http(s) URL
// with a host, a template VMID of 100 or more), and they round-trip.
func FuzzParseSettings(f *testing.F) {
	f.Add(`{"endpoint":"https://pve.example.com:8006/api2/json","node":"pve","storage":"local-lvm","template":9000}`)
	f.Add(`{"endpoint":"http://127.0.0.1:8006/api2/json","node":"n","storage":"s","template":9e3,"insecure":true}`)
	f.Add(`{"endpoint":"https://x","node":"n","storage":"s","template":100.0}`)
	f.Add(`{"endpoint":"https://x","node":"n","storage":"s","template":"9000"}`)
	f.Add(`{"endpoint":"https://x","node":"n","storage":"s","template":1e300}`)
	f.Add(`{}`)
	f.Add(`{"endpoint":"https://x","node":"n\u00f6de","storage":"s","template":100}`)
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := proxmox.ParseSettings(json.RawMessage(raw))
		if err != nil {
			return
		}
		for name, v := range map[string]string{"endpoint": s.Endpoint, "node": s.Node, "storage": s.Storage} {
			if v == "" || text.CheckLine(v) != nil {
				t.Fatalf("ParseSettings(%s) kept %s %q", raw, name, v)
			}
		}
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("ParseSettings(%s) kept endpoint %q", raw, s.Endpoint)
		}
		if s.Template < 100 {
			t.Fatalf("ParseSettings(%s) kept template %d", raw, s.Template)
		}
		out, _ := json.Marshal(s)
		again, err := proxmox.ParseSettings(out)
		if err != nil || again != s {
			t.Fatalf("ParseSettings(%s) = %+v, whose JSON %s parses as %+v, %v", raw, s, out, again, err)
		}
	})
}
