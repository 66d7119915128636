package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	info := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		bi := &debug.BuildInfo{Settings: settings}
		bi.Main.Version = version
		return bi
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "2c257f4b"}
	for _, c := range []struct {
		name                string
		info                *debug.BuildInfo
		ok                  bool
		wantVersion, commit string
	}{
		{"no build info", nil, false, "(devel)", "unknown"},
		{"no vcs", info(""), true, "(devel)", "unknown"},
		{"clean", info("v1.2.3", rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), true, "v1.2.3", "2c257f4b"},
		{"dirty", info("(devel)", rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), true, "(devel)", "2c257f4b+dirty"},
	} {
		version, commit := FromBuildInfo(c.info, c.ok)
		if version != c.wantVersion || commit != c.commit {
			t.Errorf("%s: %q, %q; want %q, %q", c.name, version, commit, c.wantVersion, c.commit)
		}
	}
}
