package domain

import (
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// HostProtocol is the oldest host protocol version that runs inst as asked:
// hostproto.CommandsVersion for an instance restored from a snapshot;
// hostproto.SandboxVersion for an instance with env or a network policy, or
// one that may be paused (a sandbox's, a warm pool's, or one whose desired
// state is paused); hostproto.MinVersion otherwise. It is the one place
// that says so: placement puts inst only on a host speaking at least this,
// and the gateway refuses a spec to a host holding an instance above its
// version.
func HostProtocol(inst sqlc.Instance) int {
	if inst.RestoreFrom != nil {
		return hostproto.CommandsVersion
	}
	if inst.EnvSealed != nil || inst.NetworkPolicy != nil || inst.SandboxID != nil || inst.WarmTemplateID != nil || lifecycle.Desired(inst.DesiredState) == lifecycle.WantPaused {
		return hostproto.SandboxVersion
	}
	return hostproto.MinVersion
}

// SpokenProtocol is the protocol version a host last said it speaks; a host
// that never said (it has not reported since the gateway started recording
// versions, or at all) counts as speaking hostproto.MinVersion, so it gets
// nothing a newer version is needed for until it reports.
func SpokenProtocol(recorded *int16) int {
	if recorded == nil {
		return hostproto.MinVersion
	}
	return int(*recorded)
}
