package conf

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ParseInt parses a positive whole number, saying what is wrong with s
// otherwise.
func ParseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is too large", s)
	case err != nil:
		return 0, fmt.Errorf("%q is not a whole number", s)
	case n < 1:
		return 0, fmt.Errorf("%q is not positive", s)
	}
	return n, nil
}

// ParseDuration parses a positive duration with a unit, such as 30s or 5m,
// saying what is wrong with s otherwise.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
			return 0, fmt.Errorf("%q has no unit: write a duration such as %ss or %sm", s, s, s)
		}
		return 0, fmt.Errorf("%q is not a duration, such as 30s or 5m", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", s)
	}
	return d, nil
}

// ParseBool parses true or false (or 1, 0, t, f, in any case), saying what
// is wrong with s otherwise.
func ParseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", s)
	}
	return b, nil
}
