package hetznertest

import (
	"fmt"
	"regexp"
	"strings"
)

// Label keys and values as the docs define them: a value is empty or up to
// 63 alphanumerics, '-', '_' and '.', starting and ending alphanumeric; a
// key is such a (non-empty) name, optionally after a DNS-subdomain prefix
// and '/'.
var (
	labelName   = regexp.MustCompile(`^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9._-]{0,61}[a-zA-Z0-9])$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	hostname    = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
)

func validLabelKey(k string) bool {
	name := k
	if i := strings.LastIndexByte(k, '/'); i >= 0 {
		prefix := k[:i]
		name = k[i+1:]
		if len(prefix) > 253 || !labelPrefix.MatchString(prefix) {
			return false
		}
	}
	return labelName.MatchString(name)
}

func validLabelValue(v string) bool { return v == "" || labelName.MatchString(v) }

// checkLabels returns what is wrong with labels, or nil.
func checkLabels(labels map[string]string) []string {
	var msgs []string
	for k, v := range labels {
		if !validLabelKey(k) {
			msgs = append(msgs, fmt.Sprintf("label key %q is invalid", k))
		}
		if !validLabelValue(v) {
			msgs = append(msgs, fmt.Sprintf("label value %q of key %q is invalid", v, k))
		}
	}
	return msgs
}

func validHostname(name string) bool { return len(name) <= 253 && hostname.MatchString(name) }

// selector is a parsed label selector: every term must match.
type selector []func(map[string]string) bool

// parseSelector parses the documented label selector syntax: terms joined
// by commas, each `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (v1,v2)` or
// `k notin (v1,v2)`.
func parseSelector(s string) (selector, error) {
	var sel selector
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	for _, term := range splitTerms(s) {
		t := strings.TrimSpace(term)
		if t == "" {
			return nil, fmt.Errorf("empty term in label selector")
		}
		f, err := parseTerm(t)
		if err != nil {
			return nil, err
		}
		sel = append(sel, f)
	}
	return sel, nil
}

func (sel selector) matches(labels map[string]string) bool {
	for _, f := range sel {
		if !f(labels) {
			return false
		}
	}
	return true
}

// splitTerms splits on the commas outside parentheses.
func splitTerms(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseTerm(t string) (func(map[string]string) bool, error) {
	bad := func() error { return fmt.Errorf("invalid label selector term %q", t) }
	key := func(k string) (string, error) {
		k = strings.TrimSpace(k)
		if !validLabelKey(k) {
			return "", bad()
		}
		return k, nil
	}
	val := func(v string) (string, error) {
		v = strings.TrimSpace(v)
		if !validLabelValue(v) {
			return "", bad()
		}
		return v, nil
	}
	if fields := strings.Fields(t); len(fields) >= 2 && (fields[1] == "in" || fields[1] == "notin") {
		k, err := key(fields[0])
		if err != nil {
			return nil, err
		}
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t[len(fields[0]):]), fields[1]))
		if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
			return nil, bad()
		}
		set := map[string]bool{}
		for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
			v, err := val(v)
			if err != nil {
				return nil, err
			}
			set[v] = true
		}
		in := fields[1] == "in"
		return func(l map[string]string) bool {
			v, ok := l[k]
			if in {
				return ok && set[v]
			}
			return !ok || !set[v]
		}, nil
	}
	for _, op := range []string{"!=", "==", "="} {
		if i := strings.Index(t, op); i >= 0 {
			k, err := key(t[:i])
			if err != nil {
				return nil, err
			}
			v, err := val(t[i+len(op):])
			if err != nil {
				return nil, err
			}
			if op == "!=" {
				return func(l map[string]string) bool { got, ok := l[k]; return !ok || got != v }, nil
			}
			return func(l map[string]string) bool { got, ok := l[k]; return ok && got == v }, nil
		}
	}
	if strings.HasPrefix(t, "!") {
		k, err := key(t[1:])
		if err != nil {
			return nil, err
		}
		return func(l map[string]string) bool { _, ok := l[k]; return !ok }, nil
	}
	k, err := key(t)
	if err != nil {
		return nil, err
	}
	return func(l map[string]string) bool { _, ok := l[k]; return ok }, nil
}
