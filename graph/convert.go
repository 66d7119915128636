package graph

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/ids"
)

// decodeID returns the UUID of an API ID of kind k given in field. A
// malformed ID is INVALID_INPUT; an ID of another kind names nothing the
// caller can see, so it is NOT_FOUND.
func decodeID(k ids.Kind, field, s string) (uuid.UUID, error) {
	kind, id, ok := ids.Parse(s)
	if !ok {
		return uuid.Nil, apierr.Invalid(field, "not a valid ID")
	}
	if kind != k {
		return uuid.Nil, apierr.NotFoundf(field, "not found")
	}
	return id, nil
}

// decoder decodes the IDs of one input, keeping the first error.
type decoder struct{ err error }

func (d *decoder) id(k ids.Kind, field, s string) uuid.UUID {
	if d.err != nil {
		return uuid.Nil
	}
	id, err := decodeID(k, field, s)
	d.err = err
	return id
}

// optID decodes an optional ID: nil gives uuid.Nil.
func (d *decoder) optID(k ids.Kind, field string, s *string) uuid.UUID {
	if s == nil {
		return uuid.Nil
	}
	return d.id(k, field, *s)
}

// ptrID decodes an optional ID for a filter: nil gives nil.
func (d *decoder) ptrID(k ids.Kind, field string, s *string) *uuid.UUID {
	if s == nil {
		return nil
	}
	id := d.id(k, field, *s)
	return &id
}

// encodeOptID encodes an optional UUID.
func encodeOptID(k ids.Kind, id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	s := ids.Encode(k, *id)
	return &s
}

// enumString turns a GraphQL enum into the lowercase word the database keeps.
func enumString[E ~string](e *E) string {
	if e == nil {
		return ""
	}
	return strings.ToLower(string(*e))
}

func ptrInt32(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

func ptrInt64(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}

func ptrInt(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func ptrInt64ToInt(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// targetKinds maps audit target types to ID kinds.
var targetKinds = map[string]ids.Kind{
	"instance": ids.Instance, "tenant": ids.Tenant, "pool": ids.Pool, "host": ids.Host,
	"flavor": ids.Flavor, "image": ids.Image, "apiToken": ids.APIToken, "ipPool": ids.IPPool,
	"providerAccount": ids.ProviderAccount, "sandboxTemplate": ids.SandboxTemplate, "sandbox": ids.Sandbox,
	"providerBootstrap": ids.ProviderBootstrap,
}

// jsonMap decodes a JSON object column.
func jsonMap(raw []byte) (map[string]any, error) {
	m := map[string]any{}
	if len(raw) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode JSON column: %w", err)
	}
	return m, nil
}

// stringMap takes a GraphQL Map of strings given in field.
func stringMap(field string, m map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, apierr.Invalid(field, "the %s entry must be a string", k)
		}
		out[k] = s
	}
	return out, nil
}

// nullable is s, or nil when it is empty: a field where an empty string
// would mean nothing (a state's reason, an error code) is null instead.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
