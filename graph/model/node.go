// Package model holds the GraphQL types that are not package domain's.
package model

// Node is any object with a typed ID. It is empty because the domain types
// that implement it know nothing of GraphQL; the executor switches on their
// types.
type Node interface{}
