package client

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
)

// TestAll: All follows the pages of a list of n items to its end, or to
// limit items, asking for no more than it needs, and stops at an error.
func TestAll(t *testing.T) {
	t.Parallel()
	list := func(n int, asked *[]int) func(context.Context, int, *string) ([]int, PageFields, error) {
		return func(_ context.Context, first int, after *string) ([]int, PageFields, error) {
			*asked = append(*asked, first)
			start := 0
			if after != nil {
				start, _ = strconv.Atoi(*after)
				start++
			}
			end := min(start+first, n)
			var page []int
			for i := start; i < end; i++ {
				page = append(page, i)
			}
			info := PageFields{HasNextPage: end < n}
			if len(page) > 0 {
				c := strconv.Itoa(end - 1)
				info.EndCursor = &c
			}
			return page, info, nil
		}
	}
	for _, c := range []struct {
		n, limit int
		want     int
		asked    []int
	}{
		{0, 0, 0, []int{100}},
		{1, 0, 1, []int{100}},
		{100, 0, 100, []int{100}},
		{250, 0, 250, []int{100, 100, 100}},
		{250, 150, 150, []int{100, 50}},
		{250, 5, 5, []int{5}},
		{3, 5, 3, []int{5}},
	} {
		var asked []int
		got, err := All(context.Background(), c.limit, list(c.n, &asked))
		if err != nil || len(got) != c.want || !slices.Equal(asked, c.asked) {
			t.Errorf("%d items, limit %d: got %d, asked %v, %v; want %d, asked %v", c.n, c.limit, len(got), asked, err, c.want, c.asked)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("%d items, limit %d: item %d is %d", c.n, c.limit, i, v)
			}
		}
	}
	boom := errors.New("boom")
	if _, err := All(context.Background(), 0, func(context.Context, int, *string) ([]int, PageFields, error) {
		return nil, PageFields{}, boom
	}); !errors.Is(err, boom) {
		t.Errorf("error %v", err)
	}
}
