package nocloud

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/better-compute/vps/hostproto"
)

// TestEnv: an instance's env reaches the guest in vendor-data, as a file a
// shell reads back value for value, and the tenant's user data is untouched.
func TestEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"GREETING": "hello",
		"QUOTES":   `it's "quoted" \ and 'twice'`,
		"DOLLARS":  "$HOME `id` $(id)",
		"LINES":    "one\ntwo\n",
		"EMPTY":    "",
		"_x9":      "ünïcode <&>",
	}
	spec := hostproto.InstanceSpec{ID: "ins_1", Name: "sbx", UserData: "#!/bin/sh\necho tenant\n", Env: env}
	s, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	if s.UserData != spec.UserData {
		t.Errorf("user-data = %q, want the tenant's byte for byte", s.UserData)
	}
	if got := s.Files()["vendor-data"]; got != s.VendorData || !strings.HasPrefix(got, "#cloud-config\n") {
		t.Fatalf("vendor-data file %q", got)
	}
	for _, want := range []string{
		`path: "/etc/sandbox/env"`, `content: ` + quote(EnvFile(env)),
		`path: "/etc/profile.d/sandbox-env.sh"`, `content: ` + quote(profileScript),
	} {
		if !strings.Contains(s.VendorData, want) {
			t.Errorf("vendor-data lacks %s:\n%s", want, s.VendorData)
		}
	}

	// The guest's shell reads every value back as it was.
	dir := t.TempDir()
	file := filepath.Join(dir, "env")
	if err := os.WriteFile(file, []byte(EnvFile(env)), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, value := range env {
		out, err := exec.Command("sh", "-c", `. "$1"; eval 'printf %s "${'"$2"'}"'`, "sh", file, name).Output()
		if err != nil {
			t.Fatalf("sh reading %s: %v", name, err)
		}
		if string(out) != value {
			t.Errorf("%s = %q in the guest's shell, want %q", name, out, value)
		}
	}
	// The profile script exports them to login shells.
	profile := filepath.Join(dir, "profile.sh")
	os.WriteFile(profile, []byte(strings.ReplaceAll(profileScript, EnvPath, file)), 0o644)
	out, err := exec.Command("sh", "-c", `. "$1"; sh -c 'printf %s "$GREETING"'`, "sh", profile).Output()
	if err != nil || string(out) != "hello" {
		t.Errorf("a child of a login shell sees GREETING=%q (%v), want hello", out, err)
	}
}

func TestNoEnvNoVendorData(t *testing.T) {
	t.Parallel()
	s, err := New(hostproto.InstanceSpec{ID: "ins_1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Files()["vendor-data"]; ok {
		t.Errorf("an instance without env has vendor-data %q", s.VendorData)
	}
}

func TestBadEnv(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{"": "x"}, {"1A": "x"}, {"A-B": "x"}, {"A B": "x"}, {"A=B": "x"}, {"A;id": "x"}, {"A": "nul\x00"},
	} {
		if _, err := New(hostproto.InstanceSpec{ID: "ins_1", Env: env}); err == nil {
			t.Errorf("env %q accepted", env)
		}
	}
}
