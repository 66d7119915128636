package hostd

import (
	"fmt"
	"sort"

	"github.com/better-compute/vps/hostproto"
)

// wholeSpec makes a spec whole from what the gateway sent: a whole spec as
// it is; a delta (version 5, After > 0) with its unchanged entries taken
// from held, the whole spec of generation After the daemon holds. It fails
// when held is not that spec or lacks an entry the delta says is
// unchanged: the daemon then asks for the whole spec, and never runs a
// partial entry.
func wholeSpec(spec hostproto.NodeSpec, held *hostproto.NodeSpec) (hostproto.NodeSpec, error) {
	if spec.After == 0 {
		return spec, nil
	}
	if held == nil || held.Generation != spec.After {
		return spec, fmt.Errorf("a delta to generation %d, but the spec held is not of it", spec.After)
	}
	byID := make(map[string]hostproto.InstanceSpec, len(held.Instances))
	for _, is := range held.Instances {
		byID[is.ID] = is
	}
	instances := make([]hostproto.InstanceSpec, 0, len(spec.Instances)+len(spec.Unchanged))
	instances = append(instances, spec.Instances...)
	for _, u := range spec.Unchanged {
		is, ok := byID[u.ID]
		if !ok || is.Generation != u.Generation {
			return spec, fmt.Errorf("a delta to generation %d keeps the entry of %s at generation %d, which the spec held does not have", spec.After, u.ID, u.Generation)
		}
		instances = append(instances, is)
	}
	sort.Slice(instances, func(i, j int) bool { return instances[i].ID < instances[j].ID })
	spec.Instances, spec.Unchanged, spec.After = instances, nil, 0
	return spec, nil
}
