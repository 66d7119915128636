package graph

import (
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/ids"
)

var (
	fuzzInstance = ids.Encode(ids.Instance, uuid.MustParse("0190e3c4-9d1e-7a2b-8c3d-4e5f60718293"))
	fuzzPool     = ids.Encode(ids.Pool, uuid.MustParse("0190e3c4-9d1e-7a2b-8c3d-4e5f60718294"))
)

// FuzzInstanceFilter: a filter of the instances list that decodes names the
// pool it was given (no two strings name one pool) and passes the name
// through as it was given.
func FuzzInstanceFilter(f *testing.F) {
	f.Add(fuzzPool, "web-1", "RUNNING")
	f.Add("", "", "")
	f.Add(fuzzInstance, "x", "DELETED")
	f.Add("pool_", "ü", "running")
	f.Fuzz(func(t *testing.T, pool, name, state string) {
		in := &model.InstanceFilter{Name: &name}
		if pool != "" {
			in.PoolID = &pool
		}
		if st := model.InstanceState(state); st.IsValid() {
			in.State = &st
		}
		got, err := instanceFilter(in)
		if err != nil {
			return
		}
		if pool != "" && (got.PoolID == nil || ids.Encode(ids.Pool, *got.PoolID) != pool) {
			t.Fatalf("pool %q decoded as %v", pool, got.PoolID)
		}
		if got.Name == nil || *got.Name != name {
			t.Fatalf("name %q became %v", name, got.Name)
		}
	})
}

// FuzzWatchFilter: a subscription's filter that decodes matches exactly the
// live events the database filter selects: an event of an instance it
// names, in its pool and state, matches; one of another instance does not.
func FuzzWatchFilter(f *testing.F) {
	f.Add(fuzzInstance, fuzzPool, "RUNNING")
	f.Add(fuzzInstance, "", "")
	f.Add("ins_", fuzzPool, "PENDING")
	f.Add(fuzzPool, fuzzInstance, "")
	f.Fuzz(func(t *testing.T, id, pool, state string) {
		in := &model.InstanceEventFilter{Ids: []string{id}}
		if pool != "" {
			in.PoolID = &pool
		}
		if st := model.InstanceState(state); st.IsValid() {
			in.State = &st
		}
		where, match, err := watchFilter(in)
		if err != nil {
			return
		}
		if len(where.IDs) != 1 {
			t.Fatalf("ids %q decoded as %v", id, where.IDs)
		}
		ev := &events.InstanceEvent{Instance: events.InstanceView{ID: ids.Encode(ids.Instance, where.IDs[0]), State: string(model.InstanceStateRunning)}}
		if where.PoolID != nil {
			ev.Instance.PoolID = ids.Encode(ids.Pool, *where.PoolID)
		}
		if where.State != nil {
			ev.Instance.State = *where.State
		}
		if !match(ev) {
			t.Fatalf("filter {ids: [%q], poolId: %q, state: %q} selects instance %s in the database but not its live event %+v", id, pool, state, where.IDs[0], ev.Instance)
		}
		ev.Instance.ID = ids.Encode(ids.Instance, uuid.New())
		if match(ev) {
			t.Fatalf("filter {ids: [%q]} matches the event of another instance", id)
		}
	})
}
