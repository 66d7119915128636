package hetzner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/better-compute/vps/drivers/cloud"
)

// kindOfCode classifies the API's error codes (docs.hetzner.cloud, "Errors")
// and the codes of failed actions. Codes not listed are Retryable.
var kindOfCode = map[hcloud.ErrorCode]cloud.Kind{
	hcloud.ErrorCodeRateLimitExceeded:     cloud.RateLimited,
	hcloud.ErrorCodeResourceLimitExceeded: cloud.Quota,
	hcloud.ErrorCodeNotFound:              cloud.NotFound,
	hcloud.ErrorCodeInvalidInput:          cloud.Invalid,
	hcloud.ErrorCodeJSONError:             cloud.Invalid,
	hcloud.ErrorCodeUniquenessError:       cloud.Invalid,
	hcloud.ErrorCodeForbidden:             cloud.Refused,
	hcloud.ErrorCodeUnauthorized:          cloud.Refused,
	hcloud.ErrorCodeProtected:             cloud.Invalid,
	hcloud.ErrorCodeInvalidServerType:     cloud.Invalid,
	hcloud.ErrorUnsupportedError:          cloud.Invalid,
	hcloud.ErrorDeprecatedAPIEndpoint:     cloud.Invalid,
	"not_supported":                       cloud.Invalid,
	// Retryable, listed for the reader: conflict, locked,
	// resource_unavailable, timeout, maintenance, server_error,
	// service_error, bad_gateway, unknown_error, placement_error,
	// server_not_stopped.
}

// classify turns an error of hcloud-go (or of the transport) into a
// cloud.Error. resp is the response of the failed call, when there is
// one. The message is the API's own; no error here carries the token, which
// travels only in the Authorization header.
func classify(err error, resp *hcloud.Response) error {
	if err == nil {
		return nil
	}
	var pe *cloud.Error
	if errors.As(err, &pe) {
		return err
	}
	var apiErr hcloud.Error
	if errors.As(err, &apiErr) {
		if r := apiErr.Response(); r != nil {
			resp = r
		}
		kind, ok := kindOfCode[apiErr.Code]
		if !ok {
			kind = kindOfStatus(resp)
		}
		if status(resp) == http.StatusTooManyRequests {
			kind = cloud.RateLimited
		}
		return newError(kind, apiErr.Message, err, resp)
	}
	var actionErr hcloud.ActionError
	if errors.As(err, &actionErr) {
		kind, ok := kindOfCode[hcloud.ErrorCode(actionErr.Code)]
		if !ok || kind == cloud.NotFound {
			kind = cloud.Retryable
		}
		return newError(kind, actionErr.Message, err, nil)
	}
	var argErr hcloud.ArgumentError
	if errors.As(err, &argErr) {
		return newError(cloud.Invalid, argErr.Error(), err, nil)
	}
	if errors.Is(err, hcloud.ErrStatusCode) {
		// An error response without the API's JSON body (a proxy's 502).
		return newError(kindOfStatus(resp), fmt.Sprintf("HTTP status %d", status(resp)), err, resp)
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return newError(cloud.Retryable, "request timed out", err, nil)
	}
	return newError(cloud.Retryable, err.Error(), nil, nil)
}

func newError(kind cloud.Kind, msg string, err error, resp *hcloud.Response) *cloud.Error {
	e := &cloud.Error{Kind: kind, Message: msg, Err: err}
	if kind == cloud.RateLimited {
		e.RetryAfter = retryAfter(resp, time.Now())
	}
	return e
}

func status(resp *hcloud.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}

// kindOfStatus classifies by the HTTP status alone, for codes not known
// and bodies not parsed.
func kindOfStatus(resp *hcloud.Response) cloud.Kind {
	switch s := status(resp); {
	case s == http.StatusTooManyRequests:
		return cloud.RateLimited
	case s == http.StatusNotFound:
		return cloud.NotFound
	case s == http.StatusUnauthorized, s == http.StatusForbidden:
		return cloud.Refused
	case s == http.StatusBadRequest, s == http.StatusUnprocessableEntity:
		return cloud.Invalid
	default: // 5xx, 409, 423, none
		return cloud.Retryable
	}
}

// retryAfter is how long to wait after a 429: the Retry-After header when
// the response has one; else the time for one token to flow back into the
// bucket, which refills linearly until RateLimit-Reset, so one token takes
// (Reset − now) / (Limit − Remaining) (one second at Hetzner's 3600 an hour),
// rounded to whole seconds as Reset has no finer grain; else one second.
// It is never less than a second.
func retryAfter(resp *hcloud.Response, now time.Time) time.Duration {
	if resp == nil || resp.Response == nil {
		return time.Second
	}
	h := resp.Header
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now).Round(time.Second)
		}
	}
	limit, err1 := strconv.Atoi(h.Get("RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("RateLimit-Remaining"))
	reset, err3 := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64)
	if err1 == nil && err2 == nil && err3 == nil && limit > remaining {
		if left := time.Unix(reset, 0).Sub(now); left > 0 {
			per := left / time.Duration(limit-remaining)
			return max(time.Second, per.Round(time.Second))
		}
	}
	return time.Second
}

func invalid(msg string) *cloud.Error {
	return &cloud.Error{Kind: cloud.Invalid, Message: msg}
}
