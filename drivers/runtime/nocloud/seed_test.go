package nocloud

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/better-compute/vps/hostproto"
)

func TestSeed(t *testing.T) {
	spec := hostproto.InstanceSpec{
		ID: "ins_1", Name: "web-1", SSHKeys: []string{"ssh-ed25519 AAAA k@h"}, UserData: "#!/bin/sh\necho hi\n",
		Network: &hostproto.Network{MAC: "02:bc:0a:00:00:05", Address: "10.0.0.5/24", Gateway: "10.0.0.1", DNS: []string{"9.9.9.9"}},
	}
	s, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`instance-id: "ins_1"`, `local-hostname: "web-1"`, `- "ssh-ed25519 AAAA k@h"`} {
		if !strings.Contains(s.MetaData, want) {
			t.Errorf("meta-data lacks %s:\n%s", want, s.MetaData)
		}
	}
	if s.UserData != spec.UserData {
		t.Errorf("user-data = %q", s.UserData)
	}
	for _, want := range []string{`macaddress: "02:bc:0a:00:00:05"`, `- "10.0.0.5/24"`, `via: "10.0.0.1"`, `- "9.9.9.9"`} {
		if !strings.Contains(s.NetworkConfig, want) {
			t.Errorf("network-config lacks %s:\n%s", want, s.NetworkConfig)
		}
	}
	if got, _ := New(hostproto.InstanceSpec{ID: "ins_2"}); got.UserData != "#cloud-config\n" || got.Files()["network-config"] != "" {
		t.Errorf("bare seed = %+v", got)
	}

	t.Run("as an ISO labelled cidata", func(t *testing.T) {
		if _, err := exec.LookPath("genisoimage"); err != nil {
			t.Fatal("GENISOIMAGE IS NOT INSTALLED: install Debian's genisoimage (make test does)")
		}
		path := filepath.Join(t.TempDir(), "seed.iso")
		if err := s.WriteISO(t.Context(), path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[0x8001:0x8006]) != "CD001" || !strings.Contains(string(b[0x8028:0x8048]), "cidata") {
			t.Fatal("not an ISO 9660 image labelled cidata")
		}
		for _, content := range s.Files() {
			if !strings.Contains(string(b), content) {
				t.Errorf("the ISO lacks %q", content)
			}
		}
	})
}
