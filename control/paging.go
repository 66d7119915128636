package control

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
)

// Page asks for a page of a list: up to First items after After, or, when
// Backward, up to First items just before Before (the list's end when
// nil). Lists keyed by time-ordered IDs come newest first, or oldest first
// when Oldest.
type Page[C any] struct {
	First         int
	After, Before *C
	Backward      bool
	Oldest        bool
}

// PageInfo says what lies beside a page, as Relay's pageInfo does.
type PageInfo struct {
	HasNext, HasPrevious bool
}

// MaxPage is the largest page a list returns.
const MaxPage = 100

// limit checks the page's size: 0 asks for no item (the page info
// alone), MaxPage for the most.
func (p Page[C]) limit() (int32, error) {
	if p.First < 0 || p.First > MaxPage {
		field := "first"
		if p.Backward {
			field = "last"
		}
		return 0, apierr.Invalid(field, "must be between 0 and %d", MaxPage)
	}
	return int32(p.First), nil
}

// trim cuts a list read with one extra row back to lim, reporting whether
// the extra row was there.
func trim[T any](items []T, lim int32) ([]T, bool) {
	if len(items) > int(lim) {
		return items[:lim], true
	}
	return items, false
}

// keyset reads the page p asks for of a list keyed by time-ordered IDs.
// read runs the list's query for the rows strictly between lo and hi (nil:
// unbounded), at most lim of them, in ascending ID order when asc, else
// descending. A page is read forward from its cursor in one query, one row
// more than asked telling whether more follow. Paging forward, there are
// items before the page when a cursor was given; paging backward, after it.
func keyset[R any](ctx context.Context, p Page[uuid.UUID], read func(ctx context.Context, asc bool, lo, hi *uuid.UUID, lim int32) ([]R, error)) ([]R, PageInfo, error) {
	lim, err := p.limit()
	if err != nil {
		return nil, PageInfo{}, err
	}
	// In the list's order, after is a lower bound and before an upper
	// one; newest first turns both around.
	lo, hi := p.After, p.Before
	if !p.Oldest {
		lo, hi = hi, lo
	}
	asc := p.Oldest != p.Backward
	rows, err := read(ctx, asc, lo, hi, lim+1)
	if err != nil {
		return nil, PageInfo{}, err
	}
	rows, more := trim(rows, lim)
	if p.Backward {
		slices.Reverse(rows)
		return rows, PageInfo{HasPrevious: more, HasNext: p.Before != nil}, nil
	}
	return rows, PageInfo{HasNext: more, HasPrevious: p.After != nil}, nil
}
