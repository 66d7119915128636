package conf

import (
	"flag"
	"strconv"
	"time"
)

// IntFlag defines a flag that sets *p, value by default, to a positive
// whole number, refusing zero and negative numbers as ParseInt does.
func IntFlag(fs *flag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var(intValue{p}, name, usage)
}

// DurationFlag defines a flag that sets *p, value by default, to a
// positive duration, refusing zero and negative ones as ParseDuration does.
func DurationFlag(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}

// intValue and durationValue are flag.Getters, as package flag's own
// values are, so help can name their type.
type intValue struct{ p *int }

func (v intValue) String() string {
	if v.p == nil { // the zero Value package flag makes to find defaults
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v intValue) Get() any { return *v.p }

func (v intValue) Set(s string) error {
	n, err := ParseInt(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

type durationValue struct{ p *time.Duration }

func (v durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (v durationValue) Get() any { return *v.p }

func (v durationValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}
