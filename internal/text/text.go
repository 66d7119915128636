// Package text holds the rules every string the platform takes from outside
// (the API's inputs, a host's reports, provider settings) must follow before
// it is stored: Postgres refuses a NUL byte and invalid UTF-8 in text, so
// they are refused at the boundary, naming the field, instead of failing
// inside as an internal error.
package text

import (
	"errors"
	"unicode"
	"unicode/utf8"
)

// The problems Check and CheckLine report.
var (
	ErrInvalidUTF8 = errors.New("is not valid UTF-8")
	ErrNUL         = errors.New("contains a NUL byte")
	ErrControl     = errors.New("contains a control character")
	ErrFormat      = errors.New("contains an invisible formatting character (such as a bidirectional override)")
)

// Check reports whether s is text the platform can store: valid UTF-8
// without NUL bytes. Other control characters are allowed (user data has
// newlines and tabs).
func Check(s string) error {
	if !utf8.ValidString(s) {
		return ErrInvalidUTF8
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return ErrNUL
		}
	}
	return nil
}

// CheckLine is Check for text shown on one line to someone who must be able
// to trust what they read, such as an SSH key's comment: it also refuses
// control characters (C0 including tab, CR and LF, DEL, C1) and Unicode
// format characters (bidirectional overrides and isolates, zero-width
// characters, byte order marks), which can make text display as something
// it is not.
func CheckLine(s string) error {
	if err := Check(s); err != nil {
		return err
	}
	for _, r := range s {
		switch {
		case unicode.IsControl(r):
			return ErrControl
		case unicode.Is(unicode.Cf, r):
			return ErrFormat
		}
	}
	return nil
}
