package e2e

import "fmt"

// sequence checks a subscriber's events as they come: each instance's
// versions go up by one from the first seen, so an event delivered twice
// or one missed is an error.
type sequence map[string]int

// next notes instance id's event of version; an event before the first
// seen may be of any version, as a subscriber may join mid-life.
func (s sequence) next(id string, version int) error {
	last, ok := s[id]
	s[id] = version
	switch {
	case !ok || version == last+1:
		return nil
	case version <= last:
		return fmt.Errorf("instance %s: version %d again after %d (delivered twice)", id, version, last)
	default:
		return fmt.Errorf("instance %s: version %d after %d (%d missed)", id, version, last, version-last-1)
	}
}
