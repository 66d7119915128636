package e2e

import (
	"bytes"
	"fmt"
	"strconv"
)

// The benchmarks' websocket clients share the cores with the servers they
// time, so they read as little as they can: each message into a buffer
// the client reuses, and of it only the fields they time or check, found
// by key without decoding the rest.

// jsonPath is the raw value at the path of keys in the JSON object msg.
func jsonPath(msg []byte, keys ...string) ([]byte, error) {
	v := msg
	for _, k := range keys {
		var err error
		if v, err = jsonField(v, k); err != nil {
			return nil, fmt.Errorf("%s in %.200q: %w", k, msg, err)
		}
	}
	return v, nil
}

var errNoField = fmt.Errorf("no such field")

// jsonField is the raw value of key in the JSON object obj (its first
// occurrence), skipping the other members' values without decoding them.
func jsonField(obj []byte, key string) ([]byte, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, fmt.Errorf("not an object")
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == '}' {
			return nil, errNoField
		}
		end, err := skipValue(obj, i) // the member's key
		if err != nil {
			return nil, err
		}
		name := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, fmt.Errorf("no colon after %s", name)
		}
		i = skipSpace(obj, i+1)
		if end, err = skipValue(obj, i); err != nil {
			return nil, err
		}
		if len(name) == len(key)+2 && string(name[1:len(name)-1]) == key {
			return obj[i:end], nil
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ',' {
			return nil, errNoField
		}
		i++
	}
}

// skipValue returns where the JSON value starting at i ends.
func skipValue(b []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			if j >= len(b) {
				return 0, fmt.Errorf("unterminated string")
			}
			if depth == 0 {
				return j + 1, nil
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j, nil // a scalar ending its object or array
			}
			if depth--; depth == 0 {
				return j + 1, nil
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j, nil
			}
		}
	}
	if depth > 0 {
		return 0, fmt.Errorf("unterminated value")
	}
	return len(b), nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonString is the raw JSON string v without its quotes (no escapes
// expected in what the clients read: ids, names, types and times).
func jsonString(v []byte) ([]byte, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return nil, fmt.Errorf("not a plain string: %.100q", v)
	}
	return v[1 : len(v)-1], nil
}

// jsonInt is the JSON number v as an int.
func jsonInt(v []byte) (int, error) {
	return strconv.Atoi(string(v))
}

// msgType is the type of a graphql-transport-ws message.
func msgType(msg []byte) (string, error) {
	v, err := jsonPath(msg, "type")
	if err != nil {
		return "", err
	}
	t, err := jsonString(v)
	return string(t), err
}

// instanceEvent is an instanceEvents "next" message's event, and its
// instance's id and the event's version, which every client checks
// (sequence.next).
func instanceEvent(msg []byte) (ev []byte, id string, version int, err error) {
	if ev, err = jsonPath(msg, "payload", "data", "instanceEvents"); err != nil {
		return nil, "", 0, err
	}
	v, err := jsonPath(ev, "version")
	if err != nil {
		return nil, "", 0, err
	}
	if version, err = jsonInt(v); err != nil {
		return nil, "", 0, fmt.Errorf("version: %w", err)
	}
	if v, err = jsonPath(ev, "instance", "id"); err != nil {
		return nil, "", 0, err
	}
	raw, err := jsonString(v)
	return ev, string(raw), version, err
}
