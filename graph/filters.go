package graph

import (
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/ids"
)

// instanceFilter decodes the filter of the instances list.
func instanceFilter(in *model.InstanceFilter) (control.InstanceFilter, error) {
	var f control.InstanceFilter
	if in == nil {
		return f, nil
	}
	var d decoder
	if f.PoolID = d.ptrID(ids.Pool, "filter.poolId", in.PoolID); d.err != nil {
		return f, d.err
	}
	f.State = (*string)(in.State)
	f.DesiredState = (*string)(in.DesiredState)
	f.Name = in.Name
	f.ExcludeDeleted = deref(in.ExcludeDeleted)
	return f, nil
}
