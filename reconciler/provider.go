package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

// convergeProvider takes one step for an instance of a provider pool, under
// its row lock. The step's call to the provider is made inside the
// transaction: two reconcilers never call for one instance at once, and a
// crash before the commit leaves the instance as it was, so the call is
// made again — a create first looks for the server the lost one made.
func (r *Reconciler) convergeProvider(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, acctID uuid.UUID) (bool, error) {
	f := providerFacts{
		state:   lifecycle.State(inst.State),
		desired: lifecycle.Desired(inst.DesiredState),
		server:  inst.ProviderServerID != nil,
	}
	if inst.ProviderStatus != nil {
		f.status = cloud.Status(*inst.ProviderStatus)
	}
	st, ok := decideProvider(f)
	if !ok {
		return false, nil
	}
	obs := observation{server: inst.ProviderServerID, serverAt: inst.ProviderServerAt, status: f.status, addresses: inst.ProviderAddresses}
	if st.call != noCall {
		row, err := q.GetProviderAccount(ctx, acctID)
		if err != nil {
			return false, fmt.Errorf("read provider account %s: %w", ids.Log(ids.ProviderAccount, acctID), err)
		}
		a, err := r.account(row)
		if err != nil {
			return false, err
		}
		callCtx, cancel := context.WithTimeout(ctx, r.cfg.ProviderTimeout)
		defer cancel()
		if err := r.callProvider(callCtx, q, a, inst, st.call, &obs); err != nil {
			if st, err = failed(st, err); err != nil {
				return false, err
			}
		}
		if st.call == callCreate {
			st.to = lifecycle.Provisioning
		}
		if err := q.SetProviderServer(ctx, obs.params(inst.ID)); err != nil {
			return false, fmt.Errorf("record server: %w", err)
		}
	}
	if st.release {
		if err := r.release(ctx, q, inst, true); err != nil {
			return false, err
		}
	}
	to := inst.State
	if st.to != "" {
		to = string(st.to)
	}
	_, err := transition(ctx, q, sqlc.TransitionParams{
		ID: inst.ID, FromState: inst.State, FromVersion: inst.Version,
		ToState: to, StateReason: st.reason,
		HostID: inst.HostID, SpecPower: inst.SpecPower, SpecGeneration: inst.SpecGeneration, Mac: inst.Mac,
		AvoidHostID: inst.AvoidHostID, ObservedState: inst.ObservedState, ObservedReason: inst.ObservedReason,
		HostCertified: inst.HostCertified, HostCertValidBefore: inst.HostCertValidBefore,
	}, nil, nil)
	return err == nil && st.to != lifecycle.Error, err
}

// failed turns a call's error into the step to take instead: the provider's
// refusal (quota, invalid, credentials or endpoint refused) is the
// instance's ERROR, a server gone is LOST or, when deleting, done; anything
// else is retried.
func failed(st providerStep, err error) (providerStep, error) {
	var pe *cloud.Error
	errors.As(err, &pe)
	switch cloud.KindOf(err) {
	case cloud.Quota, cloud.Invalid, cloud.Refused:
		reason := fmt.Sprintf("the provider refused to %s its server: %s", st.call, pe.Message)
		if st.call == callReboot {
			return providerStep{to: lifecycle.Running, reason: reason}, nil // it runs, not rebooted
		}
		return providerStep{to: lifecycle.Error, reason: reason}, nil
	case cloud.NotFound:
		if st.call == callDelete {
			return st, nil
		}
		return providerStep{to: lifecycle.Lost, reason: "its server no longer exists at the provider"}, nil
	}
	return st, err
}

// observation is what is known of an instance's server.
type observation struct {
	server    *string
	serverAt  *time.Time
	status    cloud.Status
	addresses []string
	at        time.Time
}

func (o observation) params(id uuid.UUID) sqlc.SetProviderServerParams {
	p := sqlc.SetProviderServerParams{ID: id, ServerID: o.server, ServerAt: o.serverAt, Addresses: o.addresses}
	if o.addresses == nil {
		p.Addresses = []string{}
	}
	if o.status != "" {
		s := string(o.status)
		p.Status = &s
	}
	if !o.at.IsZero() {
		p.ObservedAt = &o.at
	}
	return p
}

// callProvider makes a step's call and records in obs what it made of the
// server. A call that succeeded says what the server is now: a start or
// stop the provider carries on alone leaves it starting or stopping, and
// the sweep's next list, seeing it running or stopped, wakes the instance.
func (r *Reconciler) callProvider(ctx context.Context, q *sqlc.Queries, a *account, inst sqlc.Instance, c call, obs *observation) error {
	var err error
	switch c {
	case callCreate:
		var srv cloud.Server
		if srv, err = r.createServer(ctx, q, a, inst); err == nil {
			now := time.Now()
			obs.server, obs.serverAt, obs.status, obs.addresses = &srv.ID, &now, srv.Status, srv.Addresses
		}
	case callStart:
		var status cloud.Status
		if err = a.call(ctx, "start server", func(ctx context.Context) (err error) {
			status, err = a.driver.Start(ctx, serverOf(inst))
			return err
		}); err == nil {
			obs.status = status
		}
	case callStop:
		var status cloud.Status
		if err = a.call(ctx, "stop server", func(ctx context.Context) (err error) {
			status, err = a.driver.Stop(ctx, serverOf(inst))
			return err
		}); err == nil {
			obs.status = status
		}
	case callReboot:
		err = a.call(ctx, "reboot server", func(ctx context.Context) error { return a.driver.Reboot(ctx, serverOf(inst)) })
	case callDelete:
		err = a.call(ctx, "delete server", func(ctx context.Context) error { return a.driver.Delete(ctx, serverOf(inst)) })
		if err == nil || cloud.KindOf(err) == cloud.NotFound {
			obs.server, obs.serverAt, obs.status, obs.addresses = nil, nil, "", nil
		}
	}
	if obs.status == cloud.StatusStarting || obs.status == cloud.StatusStopping {
		a.awaitChange(r.cfg.SweepInterval)
	}
	obs.at = time.Now()
	return err
}

// serverOf is the server inst records, for a call on it.
func serverOf(inst sqlc.Instance) cloud.Ref {
	return cloud.Ref{ID: *inst.ProviderServerID, InstanceID: inst.ID.String()}
}

// createServer makes the instance's server, unless a create whose commit
// was lost already made it: the label says whose a server is.
func (r *Reconciler) createServer(ctx context.Context, q *sqlc.Queries, a *account, inst sqlc.Instance) (cloud.Server, error) {
	var found []cloud.Server
	err := a.call(ctx, "look up server", func(ctx context.Context) (err error) {
		found, err = a.driver.Find(ctx, inst.ID.String())
		return err
	})
	if err != nil {
		return cloud.Server{}, err
	}
	for _, s := range found {
		if !s.Incomplete {
			return s, nil // a second one is the orphan sweep's
		}
		err := a.call(ctx, "delete half-made server", func(ctx context.Context) error { return a.driver.Delete(ctx, s.Ref()) })
		if err != nil && cloud.KindOf(err) != cloud.NotFound {
			return cloud.Server{}, err
		}
	}
	cat, err := q.ProviderCatalog(ctx, sqlc.ProviderCatalogParams{Provider: a.provider, FlavorID: inst.FlavorID, ImageID: inst.ImageID})
	if err != nil {
		return cloud.Server{}, fmt.Errorf("read provider catalog: %w", err)
	}
	req := cloud.CreateRequest{
		InstanceID: inst.ID.String(),
		Name:       serverName(inst),
		ServerType: cat.ServerType,
		Vcpus:      int(inst.Vcpus),
		MemoryMB:   inst.MemoryMb,
		DiskGB:     int64(inst.DiskGb),
		Image:      cat.Image,
		SSHKeys:    inst.SshKeys,
		PowerOn:    inst.DesiredState == string(lifecycle.WantRunning),
	}
	if inst.UserDataSealed != nil {
		ud, err := r.cfg.Sealer.Open(inst.UserDataSealed, inst.ID[:])
		if err != nil {
			return cloud.Server{}, fmt.Errorf("open user data: %w", err)
		}
		req.UserData = string(ud)
	}
	var srv cloud.Server
	err = a.call(ctx, "create server", func(ctx context.Context) (err error) {
		srv, err = a.driver.Create(ctx, req)
		return err
	})
	return srv, err
}

// serverName is unique at the provider (Hetzner insists) and still says
// which instance it is: the tenant's name for it and the start of its ID.
func serverName(inst sqlc.Instance) string {
	name := inst.Name
	if len(name) > 50 {
		name = name[:50]
	}
	return fmt.Sprintf("%s-%s", name, inst.ID.String()[:8])
}
