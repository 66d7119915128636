package hostjoin

import (
	"strings"
	"testing"
)

// TestUserData: the join script writes the environment file the daemon's
// unit reads, and ParseEnv reads back what Env wrote.
func TestUserData(t *testing.T) {
	s := Script{Server: "https://hosts.example:8443", Token: "bcj_abc-DEF_123", CASHA256: strings.Repeat("ab", 32)}
	ud := s.UserData()
	for _, want := range []string{
		"#cloud-config\n",
		"  - path: " + EnvPath + "\n    permissions: '0600'\n",
		"      BC_SERVER=https://hosts.example:8443\n      BC_JOIN_TOKEN=bcj_abc-DEF_123\n      BC_CA_SHA256=" + s.CASHA256 + "\n",
		"  - path: " + UnitPath + "\n",
		"      ExecStart=" + BinaryPath + " host --server ${BC_SERVER} --state-dir " + StateDir + "\n",
		"  - [systemctl, enable, --now, better-compute-host.service]\n",
	} {
		if !strings.Contains(ud, want) {
			t.Errorf("user data lacks %q:\n%s", want, ud)
		}
	}
	env := ParseEnv(s.Env())
	if env["BC_SERVER"] != s.Server || env["BC_JOIN_TOKEN"] != s.Token || env["BC_CA_SHA256"] != s.CASHA256 || len(env) != 3 {
		t.Errorf("ParseEnv(Env()) = %v", env)
	}
}

func TestCheckServer(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://hosts.example:8443", true},
		{"http://10.0.0.5:8080", true},
		{"hosts.example:8443", false},
		{"ftp://hosts.example", false},
		{"https://user@hosts.example", false},
		{"https://hosts.example/?a=b", false},
		{"https://hosts.example/#x", false},
		{"https://hosts.example/a b", false},
		{"https://hosts.example/\nBC_JOIN_TOKEN=x", false},
		{"https://hosts.example/$HOME", false},
	} {
		if err := CheckServer(c.url); (err == nil) != c.ok {
			t.Errorf("CheckServer(%q) = %v, want ok=%v", c.url, err, c.ok)
		}
	}
}

func TestSeedURL(t *testing.T) {
	if got := SeedURL("http://serve.example:8080/", "bcj_x"); got != "http://serve.example:8080/host/seed/bcj_x/" {
		t.Errorf("SeedURL = %q", got)
	}
}
