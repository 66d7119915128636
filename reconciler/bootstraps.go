package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostjoin"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// ActDeleteBootstrapMachine is the audited deletion of a provider
// bootstrap's machine that did not join.
const ActDeleteBootstrapMachine = "providerBootstrap.deleteMachine"

// The states of a provider bootstrap.
const (
	bootstrapPending      = "PENDING"
	bootstrapProvisioning = "PROVISIONING"
)

// bootstraps is the vps.bootstraps kind: it takes a provider bootstrap from
// PENDING to PROVISIONING by creating its machine with the join script and
// a fresh join token, and ends it FAILED, its machine deleted, when it has
// not joined by its deadline. The gateway's join makes it JOINED.
type bootstraps struct{ r *Reconciler }

// Reconcile takes one step for the bootstrap req names, in one transaction
// under its row lock; the provider calls are made inside it, as an
// instance's are (convergeProvider).
func (k *bootstraps) Reconcile(ctx context.Context, req Request) (Result, error) {
	id, err := uuid.Parse(req.Key)
	if err != nil {
		return Result{}, Terminal(fmt.Errorf("bootstrap id %q: %w", req.Key, err))
	}
	var res Result
	err = pgx.BeginFunc(ctx, k.r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		b, err := q.LockProviderBootstrap(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return Terminal(fmt.Errorf("bootstrap %s does not exist", ids.Log(ids.ProviderBootstrap, id)))
		}
		if err != nil {
			return fmt.Errorf("lock bootstrap: %w", err)
		}
		res, err = k.step(ctx, q, b)
		return err
	})
	if err != nil && !IsTerminal(err) && ctx.Err() == nil {
		reason, wait := retryReason(err)
		var w waiting
		if errors.As(err, &w) {
			reason = string(w)
		}
		k.noteRetry(ctx, id, reason)
		return Result{RequeueAfter: wait}, err
	}
	return res, err
}

// step takes the bootstrap's next step.
func (k *bootstraps) step(ctx context.Context, q *sqlc.Queries, b sqlc.ProviderBootstrap) (Result, error) {
	now := time.Now()
	switch {
	case b.State == bootstrapPending && now.Before(b.CreatedAt.Add(k.r.cfg.BootstrapTimeout)):
		return k.provision(ctx, q, b)
	case b.State == bootstrapPending:
		return Result{}, k.fail(ctx, q, b, fmt.Sprintf("no machine could be created within %s", k.r.cfg.BootstrapTimeout))
	case b.State == bootstrapProvisioning && b.Deadline != nil && now.Before(*b.Deadline):
		return Result{RequeueAfter: b.Deadline.Sub(now)}, nil
	case b.State == bootstrapProvisioning:
		return Result{}, k.fail(ctx, q, b, fmt.Sprintf("its machine did not join within %s and was deleted", k.r.cfg.BootstrapTimeout))
	}
	return Result{}, nil // JOINED or FAILED: at rest
}

// provision creates the bootstrap's machine with a fresh join token and
// records it with the token's hash. A machine already carrying the
// bootstrap's label was made by a create whose commit was lost: its token
// is known nowhere, so it is deleted first, and there is never more than
// one machine.
func (k *bootstraps) provision(ctx context.Context, q *sqlc.Queries, b sqlc.ProviderBootstrap) (Result, error) {
	cfg := k.r.cfg
	if cfg.HostURL == "" || cfg.HostCA == nil {
		return Result{}, waiting("waiting for a reconciler configured with BC_HOST_URL (serve's host listener) and BC_SECRET to write its join script")
	}
	pin, err := cfg.HostCA.ServerFingerprint(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("host CA: %w", err)
	}
	a, gone, err := k.account(ctx, q, b)
	if gone || err != nil {
		return Result{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, cfg.ProviderTimeout)
	defer cancel()
	if err := k.deleteMachines(callCtx, q, a, b, "a create whose record was lost made it"); err != nil {
		return Result{}, err
	}
	token, hash := hostjoin.NewToken()
	req := cloud.CreateRequest{BootstrapID: b.ID.String(), Name: b.Name, ServerType: b.ServerType, Image: b.Image, PowerOn: true}
	if a.provider == "proxmox" {
		req.SeedURL = hostjoin.SeedURL(cfg.SeedURL, token)
	} else {
		req.UserData = hostjoin.Script{Server: cfg.HostURL, Token: token, CASHA256: pin}.UserData()
	}
	var srv cloud.Server
	err = a.call(callCtx, "create bootstrap machine", func(ctx context.Context) (err error) {
		srv, err = a.driver.Create(ctx, req)
		return err
	})
	if permanent(err) {
		var pe *cloud.Error
		errors.As(err, &pe)
		return Result{}, failBootstrap(ctx, q, b.ID, "the provider refused to create its machine: "+pe.Message)
	}
	if err != nil {
		return Result{}, err
	}
	now := time.Now()
	expires, deadline := now.Add(cfg.BootstrapTokenTTL), now.Add(cfg.BootstrapTimeout)
	provisioned, err := q.ProvisionBootstrap(ctx, sqlc.ProvisionBootstrapParams{
		ID: b.ID, ServerID: &srv.ID, TokenHash: hash, TokenExpiresAt: &expires, Deadline: &deadline,
	})
	if err != nil {
		return Result{}, fmt.Errorf("record bootstrap machine %s: %w", srv.ID, err)
	}
	if err := events.RecordBootstrap(ctx, q, events.Provisioning, provisioned); err != nil {
		return Result{}, err
	}
	k.r.log.InfoContext(ctx, "created a bootstrap's machine", "bootstrap", ids.Log(ids.ProviderBootstrap, b.ID),
		"account", ids.Log(ids.ProviderAccount, a.id), "server", srv.ID, "deadline", deadline)
	return Result{RequeueAfter: deadline.Sub(now)}, nil
}

// permanent reports whether a provider's error will not mend by retrying.
func permanent(err error) bool {
	switch cloud.KindOf(err) {
	case cloud.Quota, cloud.Invalid, cloud.Refused:
		return true
	}
	return false
}

// fail deletes the bootstrap's machine, if any, and ends it FAILED with
// reason: its token is dead with it.
func (k *bootstraps) fail(ctx context.Context, q *sqlc.Queries, b sqlc.ProviderBootstrap, reason string) error {
	a, gone, err := k.account(ctx, q, b)
	if err != nil {
		return err
	}
	if !gone {
		callCtx, cancel := context.WithTimeout(ctx, k.r.cfg.ProviderTimeout)
		defer cancel()
		if err := k.deleteMachines(callCtx, q, a, b, reason); err != nil {
			return err
		}
	}
	if err := failBootstrap(ctx, q, b.ID, reason); err != nil {
		return err
	}
	k.r.log.InfoContext(ctx, "a bootstrap failed", "bootstrap", ids.Log(ids.ProviderBootstrap, b.ID), "reason", reason)
	return nil
}

// failBootstrap ends an open bootstrap FAILED with reason, and records its
// event, in the transaction of q: every way a bootstrap fails goes
// through it.
func failBootstrap(ctx context.Context, q *sqlc.Queries, id uuid.UUID, reason string) error {
	b, err := q.FailBootstrap(ctx, sqlc.FailBootstrapParams{ID: id, Reason: &reason})
	if err != nil {
		return fmt.Errorf("fail bootstrap %s: %w", ids.Log(ids.ProviderBootstrap, id), err)
	}
	return events.RecordBootstrap(ctx, q, events.Failed, b)
}

// account returns the driver of the bootstrap's provider account; gone
// when the account was deleted, which fails the bootstrap.
func (k *bootstraps) account(ctx context.Context, q *sqlc.Queries, b sqlc.ProviderBootstrap) (a *account, gone bool, err error) {
	row, err := q.GetProviderAccount(ctx, b.ProviderAccountID)
	if errors.Is(err, pgx.ErrNoRows) {
		if b.State == bootstrapPending || b.State == bootstrapProvisioning {
			err = failBootstrap(ctx, q, b.ID, "its provider account was deleted")
		}
		return nil, true, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("read provider account %s: %w", ids.Log(ids.ProviderAccount, b.ProviderAccountID), err)
	}
	a, err = k.r.account(row)
	return a, false, err
}

// deleteMachines deletes every machine carrying the bootstrap's label,
// auditing each deletion with why.
func (k *bootstraps) deleteMachines(ctx context.Context, q *sqlc.Queries, a *account, b sqlc.ProviderBootstrap, why string) error {
	var found []cloud.Server
	err := a.call(ctx, "look up bootstrap machine", func(ctx context.Context) (err error) {
		found, err = a.driver.FindBootstrap(ctx, b.ID.String())
		return err
	})
	if err != nil {
		return err
	}
	for _, s := range found {
		err := a.call(ctx, "delete bootstrap machine", func(ctx context.Context) error { return a.driver.Delete(ctx, s.Ref()) })
		if err != nil && cloud.KindOf(err) != cloud.NotFound {
			return err
		}
		if err := audit.Write(ctx, q, audit.Event{
			Action: ActDeleteBootstrapMachine, TargetType: "providerBootstrap", TargetID: b.ID,
			Details: map[string]any{"provider": a.provider, "serverId": s.ID, "name": b.Name, "reason": why},
		}); err != nil {
			return err
		}
		k.r.log.InfoContext(ctx, "deleted a bootstrap's machine", "bootstrap", ids.Log(ids.ProviderBootstrap, b.ID), "server", s.ID, "reason", why)
	}
	return nil
}

// noteRetry keeps why a bootstrap is being retried in its stateReason,
// with its Updated event when the reason changed.
func (k *bootstraps) noteRetry(ctx context.Context, id uuid.UUID, reason string) {
	err := pgx.BeginFunc(ctx, k.r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		b, err := q.NoteBootstrapRetry(ctx, sqlc.NoteBootstrapRetryParams{ID: id, Reason: &reason})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the same reason, or no longer open
		}
		if err != nil {
			return err
		}
		return events.RecordBootstrap(ctx, q, events.Updated, b)
	})
	if err != nil {
		k.r.log.WarnContext(ctx, "record bootstrap retry reason", "bootstrap", ids.Log(ids.ProviderBootstrap, id), "err", err)
	}
}

// waiting is an error that says, in words for operators, what a bootstrap
// waits for: its stateReason while it is retried.
type waiting string

func (w waiting) Error() string { return string(w) }
