package conf

import (
	"strconv"
	"strings"
	"time"
)

// The constructors below declare a variable bound to *p. Their arguments
// follow package flag's: the variable's name, its default (shown by --help;
// the caller applies it), and what it sets.

// String declares a variable whose value is taken as it is.
func String(p *string, name, value, doc string) Var {
	return Func(name, value, doc, func(s string) error {
		*p = s
		return nil
	})
}

// List declares a comma-separated list; spaces around items and empty
// items are dropped.
func List(p *[]string, name string, value []string, doc string) Var {
	return Func(name, strings.Join(value, ","), doc, func(s string) error {
		*p = Split(s)
		return nil
	})
}

// Int declares a positive whole number.
func Int(p *int, name string, value int, doc string) Var {
	def := ""
	if value != 0 {
		def = strconv.Itoa(value)
	}
	return Func(name, def, doc, func(s string) error {
		n, err := ParseInt(s)
		if err != nil {
			return err
		}
		*p = n
		return nil
	})
}

// Duration declares a positive duration with a unit, such as 30s.
func Duration(p *time.Duration, name string, value time.Duration, doc string) Var {
	def := ""
	if value != 0 {
		def = value.String()
	}
	return Func(name, def, doc, func(s string) error {
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		*p = d
		return nil
	})
}

// Bool declares a switch: true, false, 1, 0 (strconv.ParseBool's forms).
func Bool(p *bool, name string, value bool, doc string) Var {
	return Func(name, strconv.FormatBool(value), doc, func(s string) error {
		b, err := ParseBool(s)
		if err != nil {
			return err
		}
		*p = b
		return nil
	})
}

// Func declares a variable that set parses, for values the constructors
// above do not cover. value is the default as --help shows it.
func Func(name, value, doc string, set func(string) error) Var {
	return Var{Name: name, Doc: doc, Default: value, set: set}
}

// Split returns the comma-separated items of s, without surrounding spaces
// and without empty items.
func Split(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
