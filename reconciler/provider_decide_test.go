package reconciler

import (
	"testing"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/lifecycle"
)

func TestDecideProvider(t *testing.T) {
	t.Parallel()
	const (
		on, off, booting, gone = cloud.StatusRunning, cloud.StatusStopped, cloud.StatusStarting, statusAbsent
		run, stop, del         = lifecycle.WantRunning, lifecycle.WantStopped, lifecycle.WantDeleted
	)
	cases := []struct {
		name   string
		f      providerFacts
		want   providerStep
		noStep bool
	}{
		{"pending is created", providerFacts{state: lifecycle.Pending, desired: run}, providerStep{call: callCreate}, false},
		{"provisioning waits while it boots", providerFacts{state: lifecycle.Provisioning, desired: run, server: true, status: booting}, providerStep{}, true},
		{"provisioning runs", providerFacts{state: lifecycle.Provisioning, desired: run, server: true, status: on}, providerStep{to: lifecycle.Starting}, false},
		{"made stopped, wanted stopped", providerFacts{state: lifecycle.Provisioning, desired: stop, server: true, status: off}, providerStep{to: lifecycle.Stopped}, false},
		{"made stopped, wanted running", providerFacts{state: lifecycle.Provisioning, desired: run, server: true, status: off}, providerStep{call: callStart, to: lifecycle.Starting}, false},
		{"starting runs", providerFacts{state: lifecycle.Starting, desired: run, server: true, status: on}, providerStep{to: lifecycle.Running}, false},
		{"running is stopped", providerFacts{state: lifecycle.Running, desired: stop, server: true, status: on}, providerStep{call: callStop, to: lifecycle.Stopping}, false},
		{"running stopped behind our back is started", providerFacts{state: lifecycle.Running, desired: run, server: true, status: off}, providerStep{call: callStart, reason: "its server was stopped at the provider; starting it again"}, false},
		{"stopping is stopped", providerFacts{state: lifecycle.Stopping, desired: stop, server: true, status: off}, providerStep{to: lifecycle.Stopped}, false},
		{"stopped is started", providerFacts{state: lifecycle.Stopped, desired: run, server: true, status: off}, providerStep{call: callStart, to: lifecycle.Starting}, false},
		{"at rest", providerFacts{state: lifecycle.Running, desired: run, server: true, status: on}, providerStep{}, true},
		{"server gone is lost", providerFacts{state: lifecycle.Running, desired: run, server: true, status: gone}, providerStep{to: lifecycle.Lost, reason: "its server no longer exists at the provider"}, false},
		{"lost stays lost", providerFacts{state: lifecycle.Lost, desired: run, server: true, status: gone}, providerStep{}, true},
		{"lost returns when its server is listed again", providerFacts{state: lifecycle.Lost, desired: run, server: true, status: on}, providerStep{to: lifecycle.Running, reason: "its server is back"}, false},
		{"lost returns stopped", providerFacts{state: lifecycle.Lost, desired: run, server: true, status: off}, providerStep{to: lifecycle.Stopped, reason: "its server is back"}, false},
		{"error stays error", providerFacts{state: lifecycle.Error, desired: run}, providerStep{}, true},
		{"rebooting reboots, running throughout", providerFacts{state: lifecycle.Rebooting, desired: run, server: true, status: on}, providerStep{call: callReboot, to: lifecycle.Running}, false},
		{"rebooting a server not running", providerFacts{state: lifecycle.Rebooting, desired: run, server: true, status: off}, providerStep{to: lifecycle.Running, reason: "not rebooted: its server was not running at the provider"}, false},
		{"rebooting, server gone", providerFacts{state: lifecycle.Rebooting, desired: run, server: true, status: gone}, providerStep{to: lifecycle.Lost, reason: "its server no longer exists at the provider"}, false},
		{"rebooting deleted", providerFacts{state: lifecycle.Rebooting, desired: del, server: true, status: on}, providerStep{call: callDelete, to: lifecycle.Deleting}, false},
		{"deleting a server", providerFacts{state: lifecycle.Running, desired: del, server: true, status: on}, providerStep{call: callDelete, to: lifecycle.Deleting}, false},
		{"deleting without a server", providerFacts{state: lifecycle.Pending, desired: del}, providerStep{to: lifecycle.Deleting}, false},
		{"deleted once its server is", providerFacts{state: lifecycle.Deleting, desired: del}, providerStep{to: lifecycle.Deleted, release: true}, false},
		{"lost is deleted", providerFacts{state: lifecycle.Lost, desired: del, server: true, status: gone}, providerStep{call: callDelete, to: lifecycle.Deleting}, false},
		{"deleted is final", providerFacts{state: lifecycle.Deleted, desired: del}, providerStep{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := decideProvider(c.f)
			if ok == c.noStep || got != c.want {
				t.Fatalf("decideProvider(%+v) = %+v, %v; want %+v, %v", c.f, got, ok, c.want, !c.noStep)
			}
			if ok && got.to != "" && got.to != c.f.state && !lifecycle.CanTransition(c.f.state, got.to) {
				t.Fatalf("step %s → %s is not in the state table", c.f.state, got.to)
			}
		})
	}
}

// TestDecideProviderConverges: from every state and every desired state,
// with a provider that does what it is asked (a create boots, then runs),
// decideProvider reaches the desired state through the state table.
func TestDecideProviderConverges(t *testing.T) {
	t.Parallel()
	states := []lifecycle.State{lifecycle.Pending, lifecycle.Provisioning, lifecycle.Starting, lifecycle.Running,
		lifecycle.Rebooting, lifecycle.Stopping, lifecycle.Stopped, lifecycle.Deleting}
	for _, s := range states {
		for _, d := range []lifecycle.Desired{lifecycle.WantRunning, lifecycle.WantStopped, lifecycle.WantDeleted} {
			for _, status := range []cloud.Status{cloud.StatusRunning, cloud.StatusStopped} {
				if s == lifecycle.Deleting && d != lifecycle.WantDeleted {
					continue // deletion is final
				}
				f := providerFacts{state: s, desired: d, server: s != lifecycle.Pending, status: status}
				if !f.server {
					f.status = ""
				}
				start := f
				var path []lifecycle.State
				for i := 0; f.state != lifecycle.State(d); i++ {
					if i == 20 {
						t.Fatalf("from %+v: no rest after 20 steps: %v", start, path)
					}
					st, ok := decideProvider(f)
					if !ok && f.status == cloud.StatusStarting {
						f.status = cloud.StatusRunning // a sweep sees it boot
						continue
					}
					if !ok {
						t.Fatalf("from %+v: stuck at %+v after %v", start, f, path)
					}
					switch st.call {
					case callCreate:
						f.server, f.status, st.to = true, cloud.StatusStarting, lifecycle.Provisioning
						if d == lifecycle.WantStopped {
							f.status = cloud.StatusStopped
						}
					case callStart:
						f.status = cloud.StatusRunning
					case callStop:
						f.status = cloud.StatusStopped
					case callDelete:
						f.server, f.status = false, ""
					case callReboot: // the server runs throughout
					}
					if st.to != "" {
						if st.to != f.state && !lifecycle.CanTransition(f.state, st.to) {
							t.Fatalf("from %+v: %s → %s is not in the state table", start, f.state, st.to)
						}
						f.state = st.to
					}
					path = append(path, f.state)
				}
			}
		}
	}
}
