// Package conf reads a process's configuration from its environment. Each
// variable is declared once, as a Var bound to the field it sets, and the
// same declarations are what --help lists, so no variable is read without
// being documented. A malformed value is an error naming its variable,
// never a silent default.
package conf

import (
	"errors"
	"fmt"
)

// Var is one environment variable a process reads.
type Var struct {
	// Name is the variable's name, such as BC_LIVE_BUFFER.
	Name string
	// Doc says what the variable sets, in a line for --help.
	Doc string
	// Default is what applies while the variable is unset, as --help shows
	// it; empty when nothing does.
	Default string
	// Required makes Read refuse the variable's absence.
	Required bool

	// set parses a non-empty value into the field the Var is bound to.
	set func(string) error
}

// Read sets the field of every variable in vars that lookup finds with a
// non-empty value; os.LookupEnv is the usual lookup. It reports every
// malformed value and every missing required variable, each error naming
// its variable, and leaves the fields of unset variables alone.
func Read(vars []Var, lookup func(name string) (string, bool)) error {
	var errs []error
	for _, v := range vars {
		s, _ := lookup(v.Name)
		switch {
		case s == "" && v.Required:
			errs = append(errs, fmt.Errorf("%s is not set (%s)", v.Name, v.Doc))
		case s == "":
		default:
			if err := v.set(s); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", v.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}
