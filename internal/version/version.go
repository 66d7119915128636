// Package version says what build a binary is: its module version and the
// VCS commit it was built from, as the Go toolchain stamped them.
package version

import "runtime/debug"

// Stamped is the version a release build stamps in at link time
// (make release: -ldflags "-X …/internal/version.Stamped=v0.5.0"); it wins
// over the module version, which a build from a checkout does not have.
var Stamped string

// Get returns the running binary's version and commit.
func Get() (version, commit string) {
	version, commit = FromBuildInfo(debug.ReadBuildInfo())
	if Stamped != "" {
		version = Stamped
	}
	return version, commit
}

// FromBuildInfo returns the module version and VCS commit that
// debug.ReadBuildInfo reported, the commit suffixed +dirty when the tree
// had changes; "(devel)" and "unknown" when it knows neither.
func FromBuildInfo(info *debug.BuildInfo, ok bool) (version, commit string) {
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
