package graph

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/ids"
)

// relay is a page request as the Relay connection arguments give it.
type relay struct {
	first, last   *int
	after, before *string
}

// size checks the request and returns how many items it asks for: first
// (default 20) or last, each at most control.MaxPage, never both.
func (r relay) size() (int, error) {
	for _, a := range []struct {
		name string
		n    *int
	}{{"first", r.first}, {"last", r.last}} {
		if a.n != nil && (*a.n < 0 || *a.n > control.MaxPage) {
			return 0, apierr.Invalid(a.name, "must be between 0 and %d", control.MaxPage)
		}
	}
	switch {
	case r.first != nil && r.last != nil:
		return 0, apierr.Invalid("last", "give first or last, not both")
	case r.last != nil:
		return *r.last, nil
	case r.first != nil:
		return *r.first, nil
	}
	return 20, nil
}

// catalogKey is where an item of a catalog list sorts; a cursor holds it,
// so a cursor keeps its place when its item is deleted.
type catalogKey struct {
	Name string    `json:"n"`
	ID   uuid.UUID `json:"i"`
}

// compare orders a before b (negative), with b (zero) or after it in
// order.
func (a catalogKey) compare(b catalogKey, order model.CatalogOrder) int {
	byID := bytes.Compare(a.ID[:], b.ID[:]) // IDs are UUIDv7: creation order
	switch order {
	case model.CatalogOrderNewestFirst:
		return -byID
	case model.CatalogOrderOldestFirst:
		return byID
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return byID
}

// maxCursor bounds a cursor's length before it is decoded.
const maxCursor = 512

func (a catalogKey) cursor() string {
	b, _ := json.Marshal(a)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseCursor(field, s string) (catalogKey, error) {
	var k catalogKey
	bad := apierr.Invalid(field, "not a cursor of this list")
	if len(s) > maxCursor {
		return k, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &k) != nil || k.ID == uuid.Nil {
		return k, bad
	}
	return k, nil
}

// catalogPage is one page of a catalog list, with what its connection
// needs beside the items.
type catalogPage[T any] struct {
	items   []T
	cursors []string
	info    model.PageInfo
	total   int
}

// pageCatalog sorts a whole catalog list by order and cuts the page r asks
// for out of it, as the Relay specification does: after and before narrow
// the list, then first takes from its start or last from its end.
func pageCatalog[T any](items []T, key func(T) catalogKey, order *model.CatalogOrder, r relay) (catalogPage[T], error) {
	n, err := r.size()
	if err != nil {
		return catalogPage[T]{}, err
	}
	by := model.CatalogOrderName
	if order != nil {
		by = *order
	}
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b T) int { return key(a).compare(key(b), by) })
	// cut is where k falls in the sorted items: before those equal to
	// it, or after them when past.
	cut := func(k catalogKey, past bool) int {
		i, _ := slices.BinarySearchFunc(items, k, func(it T, k catalogKey) int {
			if c := key(it).compare(k, by); c < 0 || past && c == 0 {
				return -1
			}
			return 1
		})
		return i
	}
	lo, hi := 0, len(items)
	for _, c := range []struct {
		field  string
		cursor *string
		past   bool
		to     *int
	}{{"after", r.after, true, &lo}, {"before", r.before, false, &hi}} {
		if c.cursor == nil {
			continue
		}
		k, err := parseCursor(c.field, *c.cursor)
		if err != nil {
			return catalogPage[T]{}, err
		}
		*c.to = cut(k, c.past)
	}
	hi = max(hi, lo)
	start, end := lo, min(hi, lo+n)
	if r.last != nil {
		start, end = max(lo, hi-n), hi
	}
	p := catalogPage[T]{items: items[start:end], total: len(items)}
	for _, it := range p.items {
		p.cursors = append(p.cursors, key(it).cursor())
	}
	p.info = pageInfo(p.cursors, start > 0, end < len(items))
	return p, nil
}

// pageInfo is the pageInfo of a page whose items have cursors, with
// items before it (hasPrevious) and after it (hasNext).
func pageInfo(cursors []string, hasPrevious, hasNext bool) model.PageInfo {
	pi := model.PageInfo{HasPreviousPage: hasPrevious, HasNextPage: hasNext}
	if n := len(cursors); n > 0 {
		pi.StartCursor, pi.EndCursor = &cursors[0], &cursors[n-1]
	}
	return pi
}

// edges pairs a page's items with their cursors as a connection's edges.
func edges[T, E any](p catalogPage[T], edge func(cursor string, node T) E) []E {
	out := make([]E, len(p.items))
	for i, it := range p.items {
		out[i] = edge(p.cursors[i], it)
	}
	return out
}

// pageOf decodes the Relay arguments of a list keyed by time-ordered IDs,
// whose cursors are its items' API IDs of kind k.
func pageOf(k ids.Kind, r relay, order *model.CreatedOrder) (control.Page[uuid.UUID], error) {
	n, err := r.size()
	if err != nil {
		return control.Page[uuid.UUID]{}, err
	}
	page := control.Page[uuid.UUID]{First: n, Backward: r.last != nil, Oldest: order != nil && *order == model.CreatedOrderOldestFirst}
	for _, c := range []struct {
		field  string
		cursor *string
		to     **uuid.UUID
	}{{"after", r.after, &page.After}, {"before", r.before, &page.Before}} {
		if c.cursor == nil {
			continue
		}
		id, ok := ids.Decode(k, *c.cursor)
		if !ok {
			return page, apierr.Invalid(c.field, "not a cursor of this list")
		}
		*c.to = &id
	}
	return page, nil
}

// idEdges makes a connection's edges and pageInfo of a page of a list
// keyed by API IDs of kind k.
func idEdges[T, E any](k ids.Kind, items []T, id func(T) uuid.UUID, info control.PageInfo, edge func(cursor string, node T) E) ([]E, model.PageInfo) {
	out := make([]E, len(items))
	cursors := make([]string, len(items))
	for i, it := range items {
		cursors[i] = ids.Encode(k, id(it))
		out[i] = edge(cursors[i], it)
	}
	return out, pageInfo(cursors, info.HasPrevious, info.HasNext)
}
