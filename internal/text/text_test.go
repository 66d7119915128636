package text

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in        string
		check     error
		checkLine error
	}{
		{"plain", nil, nil},
		{"héllo wörld ✓", nil, nil},
		{"", nil, nil},
		{"a\x00b", ErrNUL, ErrNUL},
		{"a\xffb", ErrInvalidUTF8, ErrInvalidUTF8},
		{"\xed\xa0\x80", ErrInvalidUTF8, ErrInvalidUTF8}, // an encoded surrogate
		{"line\nbreak", nil, ErrControl},
		{"carriage\rreturn", nil, ErrControl},
		{"tab\there", nil, ErrControl},
		{"del\x7f", nil, ErrControl},
		{"c1\u0085", nil, ErrControl},
		{"\u202egnp.exe", nil, ErrFormat},
		{"iso\u2066late", nil, ErrFormat},
		{"lrm\u200e", nil, ErrFormat},
		{"rlm\u200f", nil, ErrFormat},
		{"zwj\u200d", nil, ErrFormat},
		{"bom\ufeff", nil, ErrFormat},
	}
	for _, c := range cases {
		if err := Check(c.in); !errors.Is(err, c.check) {
			t.Errorf("Check(%q) = %v, want %v", c.in, err, c.check)
		}
		if err := CheckLine(c.in); !errors.Is(err, c.checkLine) {
			t.Errorf("CheckLine(%q) = %v, want %v", c.in, err, c.checkLine)
		}
	}
}
