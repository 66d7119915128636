package cloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/better-compute/vps/internal/text"
)

// A provider account's settings are a JSON object, stored as the API was
// given it (Account.Settings). Each driver package decodes them once, into
// its own Settings, with its ParseSettings: the API checks an account with
// it before storing it, and the reconciler makes the account's driver from
// what it returns. What follows is what those ParseSettings share.

// SettingsError is a setting a driver cannot run with. The API shows it as
// INVALID_INPUT on Field.
type SettingsError struct {
	// Field names the setting as the API's input does: settings.endpoint.
	Field   string
	Message string
}

func (e *SettingsError) Error() string { return e.Field + ": " + e.Message }

// InvalidSetting is the SettingsError of the setting key.
func InvalidSetting(key, format string, args ...any) *SettingsError {
	return &SettingsError{Field: "settings." + key, Message: fmt.Sprintf(format, args...)}
}

// SettingsFields are an account's settings split into their fields, for a
// ParseSettings to read one by one.
type SettingsFields map[string]json.RawMessage

// SplitSettings splits settings, a JSON object (null or nothing: no
// settings), into their fields.
func SplitSettings(raw json.RawMessage) (SettingsFields, error) {
	f := SettingsFields{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, &SettingsError{Field: "settings", Message: "must be an object"}
	}
	if f == nil { // null
		f = SettingsFields{}
	}
	return f, nil
}

// Has reports whether the setting key is given, even as null.
func (f SettingsFields) Has(key string) bool {
	_, ok := f[key]
	return ok
}

// Text returns the setting key trimmed; ok is false when it is absent, not
// a string, blank, or not one line of plain text (a NUL, which Postgres
// cannot store, or another control or format character, which no location,
// node, storage or URL has).
func (f SettingsFields) Text(key string) (v string, ok bool) {
	raw, present := f[key]
	if !present || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	v = strings.TrimSpace(v)
	return v, v != "" && text.CheckLine(v) == nil
}

// URL returns the setting key, trimmed; ok is false unless it is an http
// or https URL with a host.
func (f SettingsFields) URL(key string) (v string, ok bool) {
	v, ok = f.Text(key)
	u, err := url.Parse(v)
	return v, ok && err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
