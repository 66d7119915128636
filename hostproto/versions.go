package hostproto

// As renders s for a host of the given version: it has no field that
// version does not know. Before SandboxVersion that is no env, no network
// policy and no power paused (a version 1 daemon paused a domain as soon as
// it started, its guest frozen in the firmware; paused is sent as running,
// the first half of boot-then-pause). The gateway refuses to serve a host
// an instance that needs more than it speaks, so in practice the dropped
// fields were empty.
func (s NodeSpec) As(version int) NodeSpec {
	s.Protocol = version
	if version >= SandboxVersion {
		return s
	}
	instances := make([]InstanceSpec, len(s.Instances))
	for i, is := range s.Instances {
		is.Env, is.NetworkPolicy = nil, nil
		if is.Power == PowerPaused {
			is.Power = PowerRunning
		}
		instances[i] = is
	}
	s.Instances = instances
	return s
}

// As reads r as a report of the given version: before SandboxVersion a
// report has no stats, so any it carries are dropped.
func (r Report) As(version int) Report {
	if version >= SandboxVersion {
		return r
	}
	instances := make([]InstanceStatus, len(r.Instances))
	for i, st := range r.Instances {
		st.Stats = nil
		instances[i] = st
	}
	r.Instances = instances
	return r
}
