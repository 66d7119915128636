package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// printVersion writes the module version and VCS commit the binary was
// built from.
func printVersion(w io.Writer) {
	version, commit := buildVersion(debug.ReadBuildInfo())
	fmt.Fprintf(w, "better-compute\nversion: %s\ncommit:  %s\ngo:      %s\n", version, commit, runtime.Version())
}

// buildVersion returns the module version and VCS commit that
// debug.ReadBuildInfo reported, the commit suffixed +dirty when the tree
// had changes; "(devel)" and "unknown" when it knows neither.
func buildVersion(info *debug.BuildInfo, ok bool) (version, commit string) {
	version, commit = "(devel)", "unknown"
	if !ok {
		return version, commit
	}
	if info.Main.Version != "" {
		version = info.Main.Version
	}
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit != "unknown" {
		commit += "+dirty"
	}
	return version, commit
}
