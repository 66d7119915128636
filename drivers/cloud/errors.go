package cloud

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies a provider error by what the reconciler should do.
type Kind int

// The kinds.
const (
	// Retryable: try again after the usual backoff (timeouts, 5xx, conflicts).
	Retryable Kind = iota
	// RateLimited: slow down; retry after RetryAfter.
	RateLimited
	// Quota: the account's limit at the provider is reached; the instance
	// goes to ERROR with the provider's message.
	Quota
	// Invalid: the request is wrong and will stay wrong; ERROR.
	Invalid
	// NotFound: the server is gone.
	NotFound
	// Refused: the provider refused the account's credentials (401, 403),
	// or the operator's endpoint policy (Endpoints) refused its endpoint.
	// Nothing the account asks will succeed until its credentials or
	// settings change, or the policy does: an instance goes to ERROR, and
	// the account's sweeps back off.
	Refused
)

func (k Kind) String() string {
	return [...]string{"retryable", "rate-limited", "quota", "invalid", "not-found", "refused"}[k]
}

// Error is a classified provider error.
type Error struct {
	Kind Kind
	// RetryAfter, for RateLimited, is how long the provider asks to wait.
	RetryAfter time.Duration
	// Message is the provider's own words, shown in the instance's
	// stateReason for Quota and Invalid.
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf classifies err; an error no driver classified is Retryable.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Retryable
}

// RetryAfter is how long the provider asked to wait, for a RateLimited
// error; zero otherwise.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.Kind == RateLimited {
		return e.RetryAfter
	}
	return 0
}
