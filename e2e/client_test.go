package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	vpsclient "github.com/better-compute/vps/client"
)

// TestClient drives the typed Go client against serve, a reconciler and a
// simulated host: a create waited to RUNNING through its events (each
// state seen as it happens), a list, a stop waited to STOPPED, a delete
// waited to DELETED; the API's refusals come back as *vpsclient.Error with
// their code and field, over HTTP and over the websocket.
func TestClient(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 16})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := vpsclient.New(c.url+"/graphql", c.member, nil)
	input := vpsclient.CreateInstanceInput{PoolId: c.pool, FlavorId: c.flavor, ImageId: c.image, Name: "web-1", SshKeys: []string{sshKey}}

	var id string
	t.Run("create, and wait for RUNNING through its events", func(t *testing.T) {
		out, err := vpsclient.CreateInstance(ctx, api, input)
		if err != nil {
			t.Fatal(err)
		}
		id = out.CreateInstance.Instance.Id
		var states []vpsclient.InstanceState
		inst, err := api.Wait(ctx, id, vpsclient.InstanceStateRunning, func(i vpsclient.InstanceFields) { states = append(states, i.State) })
		if err != nil {
			t.Fatal(err)
		}
		if inst.State != vpsclient.InstanceStateRunning || len(states) == 0 || states[len(states)-1] != vpsclient.InstanceStateRunning {
			t.Fatalf("waited to %s through %v", inst.State, states)
		}
		if len(states) > 1 && slices.Contains(states[:len(states)-1], vpsclient.InstanceStateRunning) {
			t.Fatalf("RUNNING told twice: %v", states)
		}
	})
	t.Run("list", func(t *testing.T) {
		first := 10
		out, err := vpsclient.ListInstances(ctx, api, &first, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := out.Instances.Nodes; len(n) != 1 || n[0].Id != id || n[0].Name != "web-1" || n[0].Pool.Id != c.pool {
			t.Fatalf("listed %+v", n)
		}
	})
	t.Run("stop, and wait for STOPPED", func(t *testing.T) {
		if _, err := vpsclient.StopInstance(ctx, api, id); err != nil {
			t.Fatal(err)
		}
		if _, err := api.Wait(ctx, id, vpsclient.InstanceStateStopped, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("refusals as *vpsclient.Error", func(t *testing.T) {
		bad := vpsclient.New(c.url+"/graphql", "bct_nope", nil)
		for _, tc := range []struct {
			name        string
			call        func() error
			code, field string
		}{
			{"a taken name", func() error { _, err := vpsclient.CreateInstance(ctx, api, input); return err }, "CONFLICT", "name"},
			{"an unknown id", func() error {
				_, err := vpsclient.GetInstance(ctx, api, "ins_00000000000000000000000000")
				return err
			}, "NOT_FOUND", "id"},
			{"waiting on an unknown id", func() error {
				_, err := api.Wait(ctx, "ins_00000000000000000000000000", vpsclient.InstanceStateRunning, nil)
				return err
			}, "NOT_FOUND", "id"},
			{"a bad token over HTTP", func() error { _, err := vpsclient.GetInstance(ctx, bad, id); return err }, "UNAUTHENTICATED", ""},
			{"a bad token over the websocket", func() error {
				ws, _, err := bad.Live(ctx)
				if err == nil {
					ws.Close()
				}
				return err
			}, "UNAUTHENTICATED", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.call()
				var apiErr *vpsclient.Error
				if !errors.As(err, &apiErr) || apiErr.Code != tc.code || apiErr.Field != tc.field {
					t.Fatalf("%v (%#v), want %s on %q", err, err, tc.code, tc.field)
				}
			})
		}
	})
	t.Run("delete, and wait for DELETED", func(t *testing.T) {
		if _, err := vpsclient.DeleteInstance(ctx, api, id); err != nil {
			t.Fatal(err)
		}
		if _, err := api.Wait(ctx, id, vpsclient.InstanceStateDeleted, nil); err != nil {
			t.Fatal(err)
		}
		// Waiting for RUNNING now ends at once, with the state it ended in.
		_, err := api.Wait(ctx, id, vpsclient.InstanceStateRunning, nil)
		var stateErr *vpsclient.StateError
		if !errors.As(err, &stateErr) || stateErr.Instance.State != vpsclient.InstanceStateDeleted {
			t.Fatalf("waiting for a deleted instance to run: %v", err)
		}
	})
}
