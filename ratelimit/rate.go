package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rate is one token bucket: Burst operations at once, refilled at PerSecond.
type Rate struct {
	// PerSecond is how many operations a second the bucket refills.
	PerSecond float64
	// Burst is how many operations the full bucket holds.
	Burst int
	// Off lets every operation through, unchecked.
	Off bool
}

// IsZero reports whether r was left unset (and so takes its default).
func (r Rate) IsZero() bool { return r == Rate{} }

// String writes r as ParseRate reads it: "10/s:50", or "off".
func (r Rate) String() string {
	if r.Off {
		return "off"
	}
	return strconv.FormatFloat(r.PerSecond, 'f', -1, 64) + "/s:" + strconv.Itoa(r.Burst)
}

// ttl is how long an untouched bucket takes to fill up again: after that,
// its key may go, since a missing bucket is a full one.
func (r Rate) ttl() time.Duration {
	return time.Duration(math.Ceil(float64(r.Burst)/r.PerSecond*float64(time.Second))) + time.Second
}

// units are the periods ParseRate takes a rate per.
var units = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// ParseRate reads a rate written as "N/unit:burst" (unit s, m or h, such
// as "10/s:50" or "600/m:50"), or "off" for no limit. Without ":burst" the
// bucket holds one second's worth of operations, and at least one.
func ParseRate(s string) (Rate, error) {
	if s == "off" {
		return Rate{Off: true}, nil
	}
	spec, burstText, hasBurst := strings.Cut(s, ":")
	countText, unit, ok := strings.Cut(spec, "/")
	per, known := units[unit]
	if !ok || !known {
		return Rate{}, fmt.Errorf("%q is not a rate, such as 10/s:50 (N per s, m or h, then the burst) or off", s)
	}
	n, err := strconv.ParseFloat(countText, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return Rate{}, fmt.Errorf("%q: %q is not a positive number", s, countText)
	}
	r := Rate{PerSecond: n / per.Seconds()}
	if !hasBurst {
		r.Burst = max(1, int(math.Ceil(r.PerSecond)))
		return r, nil
	}
	r.Burst, err = strconv.Atoi(burstText)
	if err != nil || r.Burst < 1 {
		return Rate{}, fmt.Errorf("%q: the burst %q is not a positive whole number", s, burstText)
	}
	return r, nil
}

// Rates are the buckets of each role and class of operation. A principal
// has one bucket per class, shared by all its tokens and every serve.
type Rates struct {
	// MemberQueries bounds a member's queries and subscription starts.
	// Default DefaultMemberQueries.
	MemberQueries Rate
	// MemberMutations bounds a member's mutations. Default
	// DefaultMemberMutations.
	MemberMutations Rate
	// OperatorQueries bounds an operator's queries and subscription
	// starts. Default DefaultOperatorQueries.
	OperatorQueries Rate
	// OperatorMutations bounds an operator's mutations. Default
	// DefaultOperatorMutations.
	OperatorMutations Rate
}

// The default rates: members well above what a person or a careful script
// does, operators five times that.
var (
	DefaultMemberQueries     = Rate{PerSecond: 50, Burst: 200}
	DefaultMemberMutations   = Rate{PerSecond: 10, Burst: 50}
	DefaultOperatorQueries   = Rate{PerSecond: 250, Burst: 1000}
	DefaultOperatorMutations = Rate{PerSecond: 50, Burst: 250}
)

// WithDefaults returns rs with each unset rate at its default.
func (rs Rates) WithDefaults() Rates {
	for _, f := range []struct {
		r   *Rate
		def Rate
	}{
		{&rs.MemberQueries, DefaultMemberQueries},
		{&rs.MemberMutations, DefaultMemberMutations},
		{&rs.OperatorQueries, DefaultOperatorQueries},
		{&rs.OperatorMutations, DefaultOperatorMutations},
	} {
		if f.r.IsZero() {
			*f.r = f.def
		}
	}
	return rs
}
