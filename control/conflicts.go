package control

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/better-compute/vps/apierr"
)

// A conflict is what a unique index an input can run into says to the
// caller: the input field at fault and what already holds its value.
type conflict struct {
	field string
	taken string
}

// conflicts holds, by index, every unique index an API input can run into.
// The others (a device's claim, a lease's address, a command's snapshot) hold
// values the service makes itself: meeting one is a fault, logged and shown
// as INTERNAL. TestConflictsCoverEveryUniqueIndex keeps the two sets whole.
var conflicts = map[string]conflict{
	// A token the operator chose (BC_BOOTSTRAP_TOKEN): two servers
	// starting at once both try to make it.
	"api_tokens_hash_key":          {"token", "this token is already in use"},
	"flavors_name_key":             {"name", "a flavor with this name already exists"},
	"hosts_name_key":               {"name", "a host with this name already exists"},
	"images_name_live":             {"name", "an image with this name already exists for this owner"},
	"instances_idempotency":        {"idempotencyKey", "an instance was already created with this idempotency key"},
	"instances_name_live":          {"name", "an instance with this name already exists in the tenant"},
	"pools_name_key":               {"name", "a pool with this name already exists"},
	"provider_bootstraps_name_key": {"name", "a provider bootstrap with this name already exists"},
	"sandbox_snapshots_name_live":  {"name", "a snapshot with this name already exists in the tenant"},
	"sandbox_templates_name_live":  {"name", "a sandbox template with this name already exists for this owner"},
	"sandboxes_idempotency":        {"idempotencyKey", "a sandbox was already created with this idempotency key"},
	"tenants_name_live":            {"name", "a tenant with this name already exists"},
}

// classify turns a unique violation an input caused into a CONFLICT that
// names its field, without the index's name; anything else is returned as
// it is.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return err
	}
	c, ok := conflicts[pgErr.ConstraintName]
	if !ok {
		return err
	}
	return &apierr.Error{Code: apierr.Conflict, Field: c.field, Message: c.taken}
}
