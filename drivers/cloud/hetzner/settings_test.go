package hetzner_test

import (
	"errors"
	"testing"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/hetzner"
)

// TestParseSettings: Hetzner needs no settings; a location or endpoint,
// when given, must be one, and a fault names the setting.
func TestParseSettings(t *testing.T) {
	for _, c := range []struct {
		raw   string
		want  hetzner.Settings
		field string
	}{
		{``, hetzner.Settings{}, ""},
		{`null`, hetzner.Settings{}, ""},
		{`{}`, hetzner.Settings{}, ""},
		{`{"location": " fsn1 ", "endpoint": "http://127.0.0.1:8091/v1", "other": 1}`,
			hetzner.Settings{Location: "fsn1", Endpoint: "http://127.0.0.1:8091/v1"}, ""},
		{`{"location": ""}`, hetzner.Settings{}, "settings.location"},
		{`{"location": null}`, hetzner.Settings{}, "settings.location"},
		{`{"location": 7}`, hetzner.Settings{}, "settings.location"},
		{`{"endpoint": "ftp://x"}`, hetzner.Settings{}, "settings.endpoint"},
		{`{"endpoint": "https://"}`, hetzner.Settings{}, "settings.endpoint"},
		{`[]`, hetzner.Settings{}, "settings"},
	} {
		got, err := hetzner.ParseSettings([]byte(c.raw))
		var e *cloud.SettingsError
		switch {
		case c.field == "" && (err != nil || got != c.want):
			t.Errorf("%s: %+v, %v; want %+v", c.raw, got, err, c.want)
		case c.field != "" && (!errors.As(err, &e) || e.Field != c.field):
			t.Errorf("%s: %v; want a fault of %s", c.raw, err, c.field)
		}
	}
	_, err := hetzner.ParseSettings([]byte(`{"endpoint": "ftp://x"}`))
	if err.Error() != "settings.endpoint: must be the API URL, such as https://api.hetzner.cloud/v1" {
		t.Errorf("message: %v", err)
	}
}
