package hostproto

// As renders s for a host of the given version: it has no field that
// version does not know. Before DeltaVersion that is no delta (a spec
// rendered for an older version must be whole: the gateway builds deltas
// only for DeltaVersion) and no entry generations; before CommandsVersion
// also no commands and no restores; before SandboxVersion also no env, no
// network policy and no power paused (a version 1 daemon paused a domain
// as soon as it started, its guest frozen in the firmware; paused is sent
// as running, the first half of boot-then-pause). The gateway refuses to
// serve a host an instance that needs more than it speaks, and queues no
// command for it, so in practice the dropped fields were empty.
func (s NodeSpec) As(version int) NodeSpec {
	s.Protocol = version
	if version >= DeltaVersion {
		return s
	}
	s.After, s.Unchanged = 0, nil
	if version < CommandsVersion {
		s.Commands = nil
	}
	instances := make([]InstanceSpec, len(s.Instances))
	for i, is := range s.Instances {
		is.Generation = 0
		if version < CommandsVersion {
			is.RestoreFrom = ""
		}
		if version < SandboxVersion {
			is.Env, is.NetworkPolicy = nil, nil
			if is.Power == PowerPaused {
				is.Power = PowerRunning
			}
		}
		instances[i] = is
	}
	s.Instances = instances
	return s
}

// As reads r as a report of the given version: it keeps no field that
// version does not know. Before HeartbeatVersion a report has no Stats,
// and a partial one no stats in its statuses either;
// before DeltaVersion it is also whole (not partial, no absent list);
// before XidsVersion it also has no Xid events;
// before CommandsVersion no commands either, and its Generation speaks for
// every instance; before SandboxVersion it has no stats.
func (r Report) As(version int) Report {
	if version < HeartbeatVersion {
		r.Stats = nil
		if r.Partial {
			r.Instances = withoutStats(r.Instances)
		}
	}
	if version < DeltaVersion {
		r.Partial, r.Absent = false, nil
	}
	if version < XidsVersion {
		r.Xids = nil
	}
	if version >= CommandsVersion {
		return r
	}
	r.Commands = nil
	instances := make([]InstanceStatus, len(r.Instances))
	for i, st := range r.Instances {
		st.Generation = 0
		if version < SandboxVersion {
			st.Stats = nil
		}
		instances[i] = st
	}
	r.Instances = instances
	return r
}

// withoutStats is statuses without their stats.
func withoutStats(statuses []InstanceStatus) []InstanceStatus {
	out := make([]InstanceStatus, len(statuses))
	for i, st := range statuses {
		st.Stats = nil
		out[i] = st
	}
	return out
}
