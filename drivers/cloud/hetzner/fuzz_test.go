package hetzner_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/better-compute/vps/drivers/cloud/hetzner"
	"github.com/better-compute/vps/internal/text"
)

// FuzzParseSettings: settings that parse are ones the API can store and the
// driver can use (text without NUL or control characters, an http(s) URL
// with a host), and they round-trip: parsing what was parsed gives it back.
func FuzzParseSettings(f *testing.F) {
	f.Add(`{"location":"fsn1"}`)
	f.Add(`{"location":"nbg1","endpoint":"http://127.0.0.1:4000/v1"}`)
	f.Add(`{}`)
	f.Add(`null`)
	f.Add(`{"location":" hel1 ","extra":[1,2]}`)
	f.Add(`{"endpoint":"ftp://x"}`)
	f.Add(`[]`)
	f.Add(`{"location":"n\u00fcrnberg"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := hetzner.ParseSettings(json.RawMessage(raw))
		if err != nil {
			return
		}
		for name, v := range map[string]string{"location": s.Location, "endpoint": s.Endpoint} {
			if err := text.CheckLine(v); err != nil {
				t.Fatalf("ParseSettings(%s) kept %s %q: %v", raw, name, v, err)
			}
		}
		if s.Endpoint != "" {
			u, err := url.Parse(s.Endpoint)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("ParseSettings(%s) kept endpoint %q", raw, s.Endpoint)
			}
		}
		out, _ := json.Marshal(s)
		again, err := hetzner.ParseSettings(out)
		if err != nil || again != s {
			t.Fatalf("ParseSettings(%s) = %+v, whose JSON %s parses as %+v, %v", raw, s, out, again, err)
		}
	})
}
