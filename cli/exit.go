package cli

import (
	"errors"

	"github.com/better-compute/vps/client"
)

// Exit codes, by what went wrong, so scripts can tell a refusal from a
// fault without reading the message.
const (
	ExitOK         = 0
	ExitFailed     = 1 // anything else: the network, the API's INTERNAL
	ExitUsage      = 2 // a command line that does not parse
	ExitAuth       = 3 // UNAUTHENTICATED, FORBIDDEN, or no context to call with
	ExitNotFound   = 4 // NOT_FOUND
	ExitInvalid    = 5 // INVALID_INPUT
	ExitConflict   = 6 // CONFLICT, FAILED_PRECONDITION
	ExitLimited    = 7 // QUOTA_EXCEEDED, RATE_LIMITED
	ExitWaitFailed = 8 // --wait saw the instance end in another state
)

// exitCode is the code err exits with.
func exitCode(err error) int {
	var apiErr *client.Error
	var stateErr *client.StateError
	var usage usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &stateErr):
		return ExitWaitFailed
	case errors.Is(err, errNoContext):
		return ExitAuth
	case errors.As(err, &apiErr):
		switch apiErr.Code {
		case "UNAUTHENTICATED", "FORBIDDEN":
			return ExitAuth
		case "NOT_FOUND":
			return ExitNotFound
		case "INVALID_INPUT":
			return ExitInvalid
		case "CONFLICT", "FAILED_PRECONDITION":
			return ExitConflict
		case "QUOTA_EXCEEDED", "RATE_LIMITED":
			return ExitLimited
		}
	}
	return ExitFailed
}

// usageError is a command line that does not parse.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// errNoContext is calling the API with nowhere to call.
var errNoContext = errors.New("no API to call: run `bcctl login --endpoint URL --token TOKEN`, or set BC_ENDPOINT and BC_TOKEN")
