// Package xid reads NVIDIA Xid events from a host's kernel log for the
// runtimes: one parser of the driver's lines (Parse), a follower of a
// kernel log, /dev/kmsg or a file standing in for it (Follow), and the
// bounded set of events a runtime holds until the daemon takes them
// (Collector).
package xid

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/better-compute/vps/hostproto"
)

// line matches the driver's Xid line anywhere in a kernel log line (after a
// /dev/kmsg record's prefix "6,1234,5678,-;" or dmesg's "[ 12.345]"): the
// device (PCI:0000:3b:00, or 0000:3b:00 from older drivers, a function
// sometimes given), the code and the rest.
var line = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.([0-7]))?\): (\d{1,3}),\s*(.*)$`)

// Parse reads an Xid event from a kernel log line:
//
//	NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=nvidia-smi, GPU has fallen off the bus.
//
// The address becomes the inventory's form, 0000:3b:00.0 (a GPU is its
// device's function 0 unless the line says otherwise); the message is the
// rest without the pid and process name, made valid UTF-8 without NUL and
// cut to hostproto.MaxXidMessage bytes. At is at. Any other line, or a code
// outside 1 to hostproto.MaxXidCode, is not an Xid (false).
func Parse(s string, at time.Time) (hostproto.Xid, bool) {
	m := line.FindStringSubmatch(strings.TrimRight(s, "\r\n"))
	if m == nil {
		return hostproto.Xid{}, false
	}
	code, _ := strconv.Atoi(m[3])
	if code < 1 || code > hostproto.MaxXidCode {
		return hostproto.Xid{}, false
	}
	function := m[2]
	if function == "" {
		function = "0"
	}
	return hostproto.Xid{Address: strings.ToLower(m[1]) + "." + function, Code: code, Message: message(m[4]), At: at}, true
}

// message drops the leading pid= and name= fields of an Xid's text and
// makes the rest storable.
func message(rest string) string {
	for _, field := range []string{"pid=", "name="} {
		if strings.HasPrefix(rest, field) {
			_, after, found := strings.Cut(rest, ",")
			if !found {
				after = ""
			}
			rest = strings.TrimSpace(after)
		}
	}
	rest = strings.ToValidUTF8(strings.ReplaceAll(rest, "\x00", ""), "\uFFFD")
	if len(rest) > hostproto.MaxXidMessage {
		cut := hostproto.MaxXidMessage
		for cut > 0 && !utf8.RuneStart(rest[cut]) {
			cut--
		}
		rest = rest[:cut]
	}
	return strings.TrimSpace(rest)
}
