package model

import "github.com/better-compute/vps/sqlc"

// Instance is an instance row with the addresses it holds: the Instance
// view of the API. Events carry the addresses, so a subscriber's view needs
// no database read.
type Instance struct {
	sqlc.Instance
	Addresses []string
}
