package nocloud

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Where vendor-data puts an instance's env in the guest.
const (
	// EnvPath holds the env, one NAME='value' line each, shell-quoted: a
	// shell (or a systemd EnvironmentFile) reads it back unchanged.
	EnvPath = "/etc/sandbox/env"
	// ProfilePath exports the env to every login shell.
	ProfilePath = "/etc/profile.d/sandbox-env.sh"
)

// profileScript is the content of ProfilePath.
const profileScript = "if [ -r " + EnvPath + " ]; then set -a; . " + EnvPath + "; set +a; fi\n"

// envName is a name a shell takes as a variable.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnv refuses what no shell file can carry: a name that is not a
// variable name, a value with a NUL byte.
func checkEnv(env map[string]string) error {
	for name, value := range env {
		if !envName.MatchString(name) {
			return fmt.Errorf("env name %q is not a variable name", name)
		}
		if strings.IndexByte(value, 0) >= 0 {
			return fmt.Errorf("env %s: the value holds a NUL byte", name)
		}
	}
	return nil
}

// EnvFile renders env as the content of EnvPath, sorted by name.
func EnvFile(env map[string]string) string {
	names := make([]string, 0, len(env))
	for name := range env {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString(name + "=" + shellQuote(env[name]) + "\n")
	}
	return b.String()
}

// shellQuote single-quotes s: inside single quotes a shell takes every byte
// as it is, and a quote is written '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// vendorData is the cloud-config that writes env into the guest: cloud-init
// processes vendor-data beside the tenant's user-data, which stays byte for
// byte the tenant's. It is empty without env.
func vendorData(env map[string]string) string {
	if len(env) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("#cloud-config\n")
	b.WriteString("write_files:\n")
	for _, f := range []struct{ path, content string }{
		{EnvPath, EnvFile(env)},
		{ProfilePath, profileScript},
	} {
		b.WriteString("  - path: " + quote(f.path) + "\n")
		b.WriteString("    permissions: \"0644\"\n")
		b.WriteString("    content: " + quote(f.content) + "\n")
	}
	return b.String()
}
