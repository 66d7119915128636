package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	pve "github.com/luthermonson/go-proxmox"

	"github.com/better-compute/vps/drivers/cloud"
)

// apiError is an answer of the API with an error status. pveproxy puts its
// message in the status line's reason phrase ("500 VM 101 already exists
// on node 'pve'") and, for a 400, the failing parameters in the body's
// "errors".
type apiError struct {
	Code   int
	Reason string
	// Params are the per-parameter messages of a 400.
	Params map[string]string
	// RetryAfter is the Retry-After of a 429 or 503, if any.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.message()) }

// message is Proxmox's own words.
func (e *apiError) message() string {
	if len(e.Params) == 0 {
		return e.Reason
	}
	keys := make([]string, 0, len(e.Params))
	for k := range e.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + strings.TrimSpace(e.Params[k])
	}
	return e.Reason + " (" + strings.Join(parts, "; ") + ")"
}

// statusTransport turns every answer with an error status into an
// *apiError before go-proxmox sees it. go-proxmox reports only 400, 401,
// 403, 500 and 501 as errors; it decodes any other status (404, 502, 503,
// a proxy's 504) as a success, so an injected or proxied 503 {"data":null}
// would read as an empty VM list. It also drops the reason phrase of a 401.
type statusTransport struct{ base http.RoundTripper }

func (t statusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	e := &apiError{Code: res.StatusCode, Reason: strings.TrimSpace(strings.TrimPrefix(res.Status, strconv.Itoa(res.StatusCode)))}
	var parsed struct {
		Message string                     `json:"message"`
		Errors  map[string]json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(body, &parsed) == nil {
		if (e.Reason == "" || e.Reason == http.StatusText(e.Code)) && strings.TrimSpace(parsed.Message) != "" {
			e.Reason = strings.TrimSpace(parsed.Message)
		}
		for k, raw := range parsed.Errors {
			if e.Params == nil {
				e.Params = map[string]string{}
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			e.Params[k] = s
		}
	}
	if e.Reason == "" {
		e.Reason = http.StatusText(e.Code)
	}
	if ra := res.Header.Get("Retry-After"); ra != "" {
		if secs, err := strconv.Atoi(ra); err == nil {
			e.RetryAfter = time.Duration(secs) * time.Second
		} else if at, err := http.ParseTime(ra); err == nil {
			e.RetryAfter = time.Until(at)
		}
	}
	return nil, e
}

// taskError is a task that ended with an error exit status.
type taskError struct {
	UPID pve.UPID
	Exit string
}

func (e *taskError) Error() string { return fmt.Sprintf("task %s failed: %s", e.UPID, e.Exit) }

// kindOfMessage classifies Proxmox's words, def when they say nothing
// known. Proxmox has no quota error: the emulator's MaxVMs says "quota
// exceeded", and a real node out of room fails a clone with LVM's
// "insufficient free space" or "No space left on device"; all three are
// Quota.
func kindOfMessage(msg string, def cloud.Kind) cloud.Kind {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "quota"), strings.Contains(m, "no space left on device"),
		strings.Contains(m, "insufficient free space"):
		return cloud.Quota
	case strings.Contains(m, "does not exist"):
		return cloud.NotFound
	case strings.Contains(m, "already exists"), strings.Contains(m, "is locked"),
		strings.Contains(m, "can't lock file"):
		return cloud.Retryable
	}
	return def
}

// classify turns an error of the client into a *cloud.Error.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *cloud.Error
	if errors.As(err, &pe) {
		return err
	}
	var ae *apiError
	if errors.As(err, &ae) {
		kind := cloud.Retryable
		switch c := ae.Code; {
		case c == http.StatusUnauthorized || c == http.StatusForbidden:
			kind = cloud.Refused
		case c == http.StatusTooManyRequests:
			kind = cloud.RateLimited
		case c == http.StatusNotFound:
			kind = cloud.NotFound
		case c == http.StatusBadRequest:
			kind = kindOfMessage(ae.message(), cloud.Invalid)
			if kind == cloud.NotFound {
				kind = cloud.Invalid
			}
		case c == http.StatusNotImplemented:
			kind = cloud.Invalid
		case c >= 500:
			kind = kindOfMessage(ae.Reason, cloud.Retryable)
		case c == http.StatusRequestTimeout || c == http.StatusConflict || c == http.StatusLocked:
			kind = cloud.Retryable
		default:
			kind = cloud.Invalid
		}
		return &cloud.Error{Kind: kind, Message: ae.message(), RetryAfter: ae.RetryAfter, Err: ae}
	}
	var te *taskError
	if errors.As(err, &te) {
		return &cloud.Error{Kind: kindOfMessage(te.Exit, cloud.Retryable), Message: te.Exit, Err: te}
	}
	if errors.Is(err, pve.ErrNotAuthorized) {
		return &cloud.Error{Kind: cloud.Refused, Message: "not authorized", Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return &cloud.Error{Kind: cloud.Retryable, Message: "canceled", Err: err}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &cloud.Error{Kind: cloud.Retryable, Message: "timed out", Err: err}
	}
	return &cloud.Error{Kind: cloud.Retryable, Message: err.Error(), Err: err}
}

// is reports whether err is a provider error of kind k.
func is(err error, k cloud.Kind) bool {
	var pe *cloud.Error
	return errors.As(err, &pe) && pe.Kind == k
}

// says reports whether Proxmox's message in err contains s.
func says(err error, s string) bool {
	var pe *cloud.Error
	return errors.As(err, &pe) && strings.Contains(pe.Message, s)
}

// invalid is an Invalid error the driver finds itself.
func invalid(format string, args ...any) error {
	return &cloud.Error{Kind: cloud.Invalid, Message: fmt.Sprintf(format, args...)}
}
