package control

import (
	"maps"
	"slices"
)

// ConflictIndexes are the unique indexes a CONFLICT names a field for.
func ConflictIndexes() []string { return slices.Sorted(maps.Keys(conflicts)) }
