package cloud

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestClassification(t *testing.T) {
	limited := &Error{Kind: RateLimited, RetryAfter: 7 * time.Second, Message: "rate limit exceeded"}
	cases := []struct {
		name  string
		err   error
		kind  Kind
		after time.Duration
	}{
		{"unclassified", errors.New("connection reset"), Retryable, 0},
		{"rate limited, wrapped", fmt.Errorf("create server: %w", limited), RateLimited, 7 * time.Second},
		{"quota", &Error{Kind: Quota, Message: "server limit reached"}, Quota, 0},
		{"invalid", &Error{Kind: Invalid, Message: "unknown server type"}, Invalid, 0},
		{"not found", fmt.Errorf("delete: %w", &Error{Kind: NotFound, Message: "server 42 not found"}), NotFound, 0},
	}
	for _, c := range cases {
		if got := KindOf(c.err); got != c.kind {
			t.Errorf("%s: KindOf = %s, want %s", c.name, got, c.kind)
		}
		if got := RetryAfter(c.err); got != c.after {
			t.Errorf("%s: RetryAfter = %v, want %v", c.name, got, c.after)
		}
	}
	cause := errors.New("timeout")
	if err := (&Error{Kind: Retryable, Message: "GET /servers", Err: cause}); !errors.Is(err, cause) || err.Error() != "retryable: GET /servers: timeout" {
		t.Fatalf("Error() = %q, unwraps to cause: %v", err.Error(), errors.Is(err, cause))
	}
}
