// Package apierr defines the errors the API shows to clients: each carries a
// code from one documented set, and INVALID_INPUT names the field at fault.
package apierr

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Code is an error class shown to clients as extensions.code.
type Code string

// The codes of the API. Another tenant's object is NotFound, never Forbidden.
const (
	Unauthenticated    Code = "UNAUTHENTICATED"
	Forbidden          Code = "FORBIDDEN"
	NotFound           Code = "NOT_FOUND"
	InvalidInput       Code = "INVALID_INPUT"
	QuotaExceeded      Code = "QUOTA_EXCEEDED"
	Conflict           Code = "CONFLICT"
	FailedPrecondition Code = "FAILED_PRECONDITION"
	RateLimited        Code = "RATE_LIMITED"
	Internal           Code = "INTERNAL"
)

// Codes are the codes of the API, as docs/api.md lists them.
var Codes = []Code{Unauthenticated, Forbidden, NotFound, InvalidInput, QuotaExceeded, Conflict, FailedPrecondition, RateLimited, Internal}

// Documented reports whether c is one of Codes.
func (c Code) Documented() bool { return slices.Contains(Codes, c) }

// Error is an error safe to show to a client.
type Error struct {
	Code    Code
	Message string
	// Field names the input field at fault, for InvalidInput, NotFound and
	// Conflict.
	Field string
	// Limit names the limit that was hit: the quota's, for QuotaExceeded;
	// the request's (body, tokens, selections, depth, time, complexity),
	// for InvalidInput.
	Limit string
	// RetryAfter is how long to wait before trying again, for RateLimited.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// CodeOf returns the client-facing code of err: Internal for anything that is
// not an *Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Invalid reports bad input in field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: InvalidInput, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFoundf reports an object the caller cannot see, named by field.
func NotFoundf(field, format string, args ...any) *Error {
	return &Error{Code: NotFound, Field: field, Message: fmt.Sprintf(format, args...)}
}

// New returns an error with code and message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Quota reports that limit would be exceeded.
func Quota(limit string, max int64) *Error {
	return &Error{Code: QuotaExceeded, Limit: limit, Message: fmt.Sprintf("quota exceeded: %s limit is %d", limit, max)}
}

// Limited reports an operation refused by a rate limit, which may be tried
// again after retryAfter.
func Limited(retryAfter time.Duration) *Error {
	return &Error{Code: RateLimited, RetryAfter: retryAfter, Message: fmt.Sprintf("rate limit exceeded: retry after %v", retryAfter)}
}
