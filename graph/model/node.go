// Package model holds the GraphQL types that are not database rows.
package model

// Node is any object with a typed ID. It is empty because the database rows
// that implement it are generated code; the executor switches on their types.
type Node interface{}
