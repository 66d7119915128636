package app

import (
	"flag"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/better-compute/vps/internal/conf"
)

// settings is a process's configuration, as cmd/better-compute uses it.
type settings interface {
	Env() []conf.Var
	Flags(*flag.FlagSet)
}

// TestDefaultsShownAreApplied: the defaults --help shows, of environment
// variables and flags, read back into a configuration, are what its
// applyDefaults sets, so help cannot drift from behaviour.
func TestDefaultsShownAreApplied(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name          string
		shown, zero   settings
		applyDefaults func(settings)
	}{
		{"serve", &Config{Logger: log}, &Config{Logger: log}, func(s settings) { s.(*Config).applyDefaults() }},
		{"reconcile", &ReconcilerConfig{Logger: log}, &ReconcilerConfig{Logger: log}, func(s settings) { s.(*ReconcilerConfig).applyDefaults() }},
		{"host", &HostConfig{Logger: log}, &HostConfig{Logger: log}, func(s settings) { s.(*HostConfig).applyDefaults() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.shown.Flags(fs)
			var args []string
			fs.VisitAll(func(f *flag.Flag) { args = append(args, "--"+f.Name+"="+f.DefValue) })
			if err := fs.Parse(args); err != nil {
				t.Fatalf("a flag's default does not parse: %v", err)
			}
			var defaulted []conf.Var
			for _, v := range c.shown.Env() {
				if v.Default != "" {
					defaulted = append(defaulted, v)
				}
			}
			lookup := func(name string) (string, bool) {
				for _, v := range defaulted {
					if v.Name == name {
						return v.Default, true
					}
				}
				return "", false
			}
			if err := conf.Read(defaulted, lookup); err != nil {
				t.Fatalf("a variable's default does not parse: %v", err)
			}
			c.applyDefaults(c.zero)
			if !reflect.DeepEqual(c.shown, c.zero) {
				t.Fatalf("the defaults shown give\n%+v\napplyDefaults gives\n%+v", c.shown, c.zero)
			}
		})
	}
}

// TestEnvRefuses: a malformed value stops a process's configuration with
// an error naming the variable.
func TestEnvRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg        settings
		name, val  string
		wantInText string
	}{
		{&Config{}, "BC_LIVE_BUFFER", "abc", `BC_LIVE_BUFFER: "abc" is not a whole number`},
		{&Config{}, "BC_LIVE_BUFFER", "0", `BC_LIVE_BUFFER: "0" is not positive`},
		{&Config{}, "BC_LIVE_MAX_UNREAD", "1MiB", `BC_LIVE_MAX_UNREAD: "1MiB" is not a whole number`},
		{&Config{}, "BC_WS_MAX_CONNECTIONS", "-1", `BC_WS_MAX_CONNECTIONS: "-1" is not positive`},
		{&Config{}, "BC_HOST_SILENT_AFTER", "5", `BC_HOST_SILENT_AFTER: "5" has no unit`},
		{&Config{}, "BC_GRAPHQL_MAX_BODY", "1MiB", `BC_GRAPHQL_MAX_BODY: "1MiB" is not a whole number`},
		{&Config{}, "BC_GRAPHQL_DOCUMENT_TIMEOUT", "1", `BC_GRAPHQL_DOCUMENT_TIMEOUT: "1" has no unit`},
		{&Config{}, "BC_PROVIDERS", "hetzner,aws", `BC_PROVIDERS: "aws" is not a provider kind`},
		{&Config{}, "BC_RUNTIMES", "kvm-libvirt", `BC_RUNTIMES: "kvm-libvirt" is not a runtime (libvirt-kvm, fake)`},
		{&DoctorConfig{}, "BC_RUNTIMES", "libvirt-kvm,kvm", `BC_RUNTIMES: "kvm" is not a runtime`},
		{&Config{}, "BC_RATE_LIMIT_MEMBER_MUTATIONS", "10/d:5", `BC_RATE_LIMIT_MEMBER_MUTATIONS: "10/d:5" is not a rate`},
		{&Config{}, "BC_RATE_LIMIT_OPERATOR_QUERIES", "10/s:0", `BC_RATE_LIMIT_OPERATOR_QUERIES: "10/s:0": the burst "0" is not a positive whole number`},
		{&ReconcilerConfig{}, "BC_HOST_SILENT_AFTER", "0s", `BC_HOST_SILENT_AFTER: "0s" is not positive`},
		{&ReconcilerConfig{}, "BC_SANDBOX_INTERVAL", "15", `BC_SANDBOX_INTERVAL: "15" has no unit`},
		{&ReconcilerConfig{}, "BC_PROVIDER_ALLOW_PRIVATE", "yes", `BC_PROVIDER_ALLOW_PRIVATE: "yes" is not true or false`},
	} {
		env := map[string]string{"DATABASE_URL": "postgres://db", "REDIS_URL": "redis://redis", "BC_SECRET": "s", c.name: c.val}
		err := conf.Read(c.cfg.Env(), func(name string) (string, bool) { v, ok := env[name]; return v, ok })
		if err == nil || !strings.Contains(err.Error(), c.wantInText) {
			t.Errorf("%T with %s=%s: %v; want %q", c.cfg, c.name, c.val, err, c.wantInText)
		}
	}
}

// TestDevMakesWhatServeRequires: dev reads serve's variables but requires
// none of them, and then its in-process reconciler's usage metering.
func TestDevMakesWhatServeRequires(t *testing.T) {
	var serve Config
	var dev DevConfig
	serveVars, devVars := serve.Env(), dev.Env()
	var extra []string
	for i, v := range devVars {
		if i >= len(serveVars) {
			extra = append(extra, v.Name)
			continue
		}
		if v.Name != serveVars[i].Name || v.Required {
			t.Errorf("dev's %s (required %v), serve's %s", v.Name, v.Required, serveVars[i].Name)
		}
	}
	if want := []string{"BC_USAGE_INTERVAL", "BC_USAGE_SETTLE"}; !slices.Equal(extra, want) {
		t.Errorf("dev reads %v beyond serve's variables, want %v", extra, want)
	}
	if err := conf.Read(devVars, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatalf("dev with nothing set: %v", err)
	}
}

// TestDevAllowsPrivateEndpoints: dev's emulators listen on loopback, so
// dev lets provider accounts reach private addresses unless told not to;
// serve does not.
func TestDevAllowsPrivateEndpoints(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"BC_PROVIDER_ALLOW_PRIVATE": "false"}, false},
	} {
		var dev DevConfig
		dev.Flags(flag.NewFlagSet("dev", flag.ContinueOnError))
		if err := conf.Read(dev.Env(), func(name string) (string, bool) { v, ok := c.env[name]; return v, ok }); err != nil {
			t.Fatal(err)
		}
		if dev.ProviderEndpoints.AllowPrivate != c.want {
			t.Errorf("dev with %v: AllowPrivate = %v, want %v", c.env, dev.ProviderEndpoints.AllowPrivate, c.want)
		}
	}
	var serve Config
	serve.Flags(flag.NewFlagSet("serve", flag.ContinueOnError))
	serve.applyDefaults()
	if serve.ProviderEndpoints.AllowPrivate || len(serve.ProviderEndpoints.Hosts) != 1 || serve.ProviderEndpoints.Hosts[0] != "api.hetzner.cloud" {
		t.Errorf("serve's default policy: %+v", serve.ProviderEndpoints)
	}
}
