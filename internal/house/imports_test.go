package house

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/better-compute/vps"

// pkg is a package of the module as go list tells it, test files left out.
type pkg struct {
	ImportPath string
	// Imports are its direct imports; Deps every package it depends on.
	Imports, Deps []string
}

// The sides of the wire and who may reach them, as paths in the module; a
// path ending in "/..." is the package and every package below it.
var (
	// hostSide runs on hypervisor hosts.
	hostSide = []string{"hostd", "hostproto", "drivers/runtime/..."}
	// api is what serves requests: it records desired state only.
	api = []string{"graph/...", "control/...", "server/..."}
	// runtimeImporters are the non-test packages that may import a runtime
	// driver: the process wiring of hosts (better-compute host, dev's
	// simulated hosts) and the runtimes themselves.
	runtimeImporters = []string{"cmd/better-compute", "drivers/runtime/..."}
)

// under reports whether the module's package path is one of paths.
func under(path string, paths []string) bool {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return false
	}
	for _, p := range paths {
		if base, tree := strings.CutSuffix(p, "/..."); tree {
			if rel == base || strings.HasPrefix(rel, base+"/") {
				return true
			}
		} else if rel == p {
			return true
		}
	}
	return false
}

// violations are the import rules pkgs break, each stated with the
// packages that break it.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if under(p.ImportPath, []string{"emulator/..."}) {
			out = append(out, fmt.Sprintf("emulator/ is gone: an emulator lives beside the driver it fakes, as a test-support package (drivers/cloud/hetzner/hetznertest), but %s is a package under emulator/", p.ImportPath))
		}
		if under(p.ImportPath, hostSide) {
			for _, d := range p.Deps {
				if under(d, []string{"drivers/cloud/..."}) {
					out = append(out, fmt.Sprintf("the host side (hostd, hostproto, drivers/runtime/...) never depends on a cloud driver (drivers/cloud/...), but %s depends on %s", p.ImportPath, d))
				}
			}
		}
		if !under(p.ImportPath, runtimeImporters) {
			for _, d := range p.Imports {
				if under(d, []string{"drivers/runtime/..."}) {
					out = append(out, fmt.Sprintf("only the host processes' wiring (cmd/better-compute) and the runtimes themselves import a runtime driver (drivers/runtime/...), but %s imports %s", p.ImportPath, d))
				}
			}
		}
		if under(p.ImportPath, api) {
			for _, d := range p.Deps {
				if under(d, []string{"drivers/..."}) {
					out = append(out, fmt.Sprintf("nothing in the API (graph, control, server) depends on a driver (drivers/...): it is handed what it needs, such as the drivers' settings checks, by app; but %s depends on %s", p.ImportPath, d))
				}
			}
		}
	}
	return out
}

// modulePackages lists the module's packages with go list.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportRules: the module's non-test code keeps the drivers on their
// sides of the wire and out of the API (see violations).
func TestImportRules(t *testing.T) {
	t.Parallel()
	pkgs := modulePackages(t)
	// The rules name packages; one renamed away would make its rule vacuous.
	for _, name := range []string{"hostd", "hostproto", "graph", "control", "server", "cmd/better-compute",
		"drivers/cloud", "drivers/runtime/fake", "drivers/runtime/libvirt"} {
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.ImportPath == module+"/"+name }) {
			t.Errorf("the import rules name %s, which go list does not know: update them", name)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestImportRulesCatch: each rule fails on an import that breaks it.
func TestImportRulesCatch(t *testing.T) {
	t.Parallel()
	const (
		cloud   = module + "/drivers/cloud"
		hetzner = module + "/drivers/cloud/hetzner"
		fake    = module + "/drivers/runtime/fake"
		nocloud = module + "/drivers/runtime/nocloud"
	)
	clean := []pkg{
		{ImportPath: module + "/cmd/better-compute", Imports: []string{fake}, Deps: []string{fake, nocloud}},
		{ImportPath: fake, Imports: []string{nocloud}, Deps: []string{nocloud}},
		{ImportPath: module + "/hostd", Deps: []string{module + "/hostproto"}},
		{ImportPath: module + "/app", Imports: []string{hetzner}, Deps: []string{hetzner, cloud}},
		{ImportPath: module + "/control", Deps: []string{module + "/apierr"}},
	}
	if v := violations(clean); len(v) != 0 {
		t.Fatalf("the rules refuse what they allow: %q", v)
	}
	for _, c := range []struct {
		name  string
		added pkg
		rule  string
	}{
		{"a package under emulator/", pkg{ImportPath: module + "/emulator/hetzner"}, "emulator/ is gone"},
		{"hostd on a cloud driver", pkg{ImportPath: module + "/hostd", Imports: []string{hetzner}, Deps: []string{hetzner, cloud}},
			"the host side (hostd, hostproto, drivers/runtime/...) never depends on a cloud driver"},
		{"a runtime on the cloud interface", pkg{ImportPath: module + "/drivers/runtime/libvirt", Imports: []string{cloud}, Deps: []string{cloud}},
			"the host side (hostd, hostproto, drivers/runtime/...) never depends on a cloud driver"},
		{"the reconciler on a runtime", pkg{ImportPath: module + "/reconciler", Imports: []string{fake}, Deps: []string{fake, nocloud}},
			"only the host processes' wiring (cmd/better-compute) and the runtimes themselves import a runtime driver"},
		{"control on a cloud driver", pkg{ImportPath: module + "/control", Imports: []string{hetzner}, Deps: []string{hetzner, cloud}},
			"nothing in the API (graph, control, server) depends on a driver"},
		{"graph on a runtime, through another package", pkg{ImportPath: module + "/graph/model", Imports: []string{module + "/ids"}, Deps: []string{module + "/ids", nocloud}},
			"nothing in the API (graph, control, server) depends on a driver"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := violations(append(slices.Clone(clean), c.added))
			if len(v) == 0 || !strings.HasPrefix(v[0], c.rule) || !strings.Contains(v[0], c.added.ImportPath) {
				t.Fatalf("violations = %q; want the rule %q, naming %s", v, c.rule, c.added.ImportPath)
			}
		})
	}
}
