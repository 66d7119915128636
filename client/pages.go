package client

import "context"

// pageSize is how many items All asks for at a time: the API's most.
const pageSize = 100

// All follows a list's pages forward from its start, through page, until
// the list ends or it holds limit items (0: the whole list), and returns
// them. page reads up to first items after a cursor (nil: from the start).
func All[N any](ctx context.Context, limit int, page func(ctx context.Context, first int, after *string) ([]N, PageFields, error)) ([]N, error) {
	var (
		out   []N
		after *string
	)
	for {
		first := pageSize
		if limit > 0 {
			first = min(first, limit-len(out))
		}
		nodes, info, err := page(ctx, first, after)
		if err != nil {
			return nil, err
		}
		out = append(out, nodes...)
		if !info.HasNextPage || info.EndCursor == nil || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		after = info.EndCursor
	}
}
