// Package house holds no code: its tests check the repository's own rules,
// such as what git may track and which packages may import which.
package house
