package events

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
)

// idDecoder turns an event view's API IDs back into UUIDs, noting each
// field whose ID is malformed, so a view reports them all at once.
type idDecoder struct {
	bad []string
}

// id decodes s, an ID of kind k in field.
func (d *idDecoder) id(k ids.Kind, field, s string) uuid.UUID {
	id, ok := ids.Decode(k, s)
	if !ok {
		d.bad = append(d.bad, field)
	}
	return id
}

// optional decodes s when it is set; nil and "" stay nil.
func (d *idDecoder) optional(k ids.Kind, field string, s *string) *uuid.UUID {
	if s == nil || *s == "" {
		return nil
	}
	id := d.id(k, field, *s)
	return &id
}

// err says which fields of the event of what (with its ID) were malformed;
// nil when none was.
func (d *idDecoder) err(what, id string) error {
	if d.bad == nil {
		return nil
	}
	return fmt.Errorf("%s event %s: malformed %s", what, id, strings.Join(d.bad, ", "))
}
