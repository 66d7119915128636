package cloud

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
)

// TestEndpointsCheck: a tenant's account names only a listed host, on the
// listed port when the entry has one; no account names a non-public
// address or a loopback name unless private addresses are allowed.
func TestEndpointsCheck(t *testing.T) {
	t.Parallel()
	policy := Endpoints{Hosts: []string{"api.hetzner.cloud", "pve.example.com:8006", "*.lab.example", "203.0.113.7", "[2001:db8::7]:8006", "localhost"}}
	private := Endpoints{Hosts: policy.Hosts, AllowPrivate: true}
	cases := []struct {
		endpoint string
		policy   Endpoints
		shared   bool
		ok       bool
	}{
		{"https://api.hetzner.cloud/v1", policy, false, true},
		{"https://API.Hetzner.Cloud./v1", policy, false, true},
		{"https://api.hetzner.cloud.evil.net/v1", policy, false, false},
		{"https://pve.example.com:8006/api2/json", policy, false, true},
		{"https://pve.example.com/api2/json", policy, false, false}, // 443, not the listed port
		{"https://pve.example.com:8007/api2/json", policy, false, false},
		{"https://a.lab.example:8006", policy, false, true},
		{"https://lab.example:8006", policy, false, false},
		{"https://evil.net", policy, false, false},
		{"https://evil.net", policy, true, true},      // a shared account skips the list
		{"https://203.0.113.7", policy, false, false}, // listed, but documentation space is not public
		{"https://203.0.113.7", private, false, true},
		{"https://[2001:0db8:0::7]:8006", private, false, true},
		{"http://127.0.0.1:8006", policy, true, false},
		{"http://127.0.0.1:8006", private, true, true},
		{"http://127.0.0.1:8006", private, false, false}, // allowed private, but not listed
		{"http://169.254.169.254/latest/meta-data", policy, true, false},
		{"http://[::ffff:10.0.0.1]/", policy, true, false},
		{"http://[fe80::1%25eth0]/", policy, true, false},
		{"http://0.0.0.0:8006", policy, true, false},
		{"https://localhost:8006", policy, false, false}, // listed, but loopback
		{"https://db.localhost:8006", policy, true, false},
		{"https://localhost:8006", private, false, true},
		{"not a url", policy, true, false},
	}
	for _, c := range cases {
		err := c.policy.Check(c.endpoint, c.shared)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q, shared %v, private %v) = %v, want ok %v", c.endpoint, c.shared, c.policy.AllowPrivate, err, c.ok)
		}
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"1.1.1.1": true, "2a01:4f8::1": true, "116.203.0.1": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd00::1": false, "0.0.0.0": false, "::": false,
		"100.100.100.200": false, "224.0.0.1": false, "255.255.255.255": false, "::ffff:127.0.0.1": false,
		"64:ff9b::a00:1": false, "64:ff9b::101:101": true, "2002:7f00:1::": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestTransportChecksWhatIsDialled: the policy holds on every connection
// an account's driver opens, after name resolution: a listed name that
// resolves to loopback is refused unless private addresses are allowed,
// and a name not listed is refused for a tenant's account before any
// lookup. A refusal is a Refused *Error, and reaches no server.
func TestTransportChecksWhatIsDialled(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	get := func(policy Endpoints, shared bool, host string) error {
		tr := policy.Transport(shared)
		defer tr.CloseIdleConnections()
		res, err := (&http.Client{Transport: tr}).Get("http://" + net.JoinHostPort(host, port) + "/")
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	cases := []struct {
		name   string
		policy Endpoints
		shared bool
		host   string
		ok     bool
	}{
		{"listed name resolving to loopback", Endpoints{Hosts: []string{"localhost"}}, false, "localhost", false},
		{"shared account, name resolving to loopback", Endpoints{}, true, "localhost", false},
		{"loopback address", Endpoints{Hosts: []string{"127.0.0.1"}}, false, "127.0.0.1", false},
		{"name not listed", Endpoints{AllowPrivate: true}, false, "localhost", false},
		{"listed and private allowed", Endpoints{Hosts: []string{"localhost"}, AllowPrivate: true}, false, "localhost", true},
		{"shared and private allowed", Endpoints{AllowPrivate: true}, true, "127.0.0.1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := served.Load()
			err := get(c.policy, c.shared, c.host)
			if c.ok {
				if err != nil || served.Load() != before+1 {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != Refused || KindOf(err) != Refused {
				t.Fatalf("err = %v, want a Refused *Error", err)
			}
			if served.Load() != before {
				t.Fatal("the refused request reached the server")
			}
		})
	}
}
