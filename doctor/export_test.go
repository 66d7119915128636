package doctor

import "github.com/better-compute/vps/internal/vps"

// WithRuntimes makes d know rts besides the build's runtimes, so a test can
// give it a runtime whose guests share a kernel.
func WithRuntimes(d *Doctor, rts ...vps.Runtime) {
	d.lookup = func(name string) (vps.Runtime, bool) {
		for _, r := range rts {
			if r.Name == name {
				return r, true
			}
		}
		return vps.LookupRuntime(name)
	}
}
