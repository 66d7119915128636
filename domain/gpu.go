package domain

import (
	"fmt"
	"regexp"
	"time"
)

// GPUHealth is what a GPU's Xid events say of it. A fatal Xid marks the
// device unhealthy until an operator clears the mark: placement skips it,
// and the instance holding it says why in its state reason.
type GPUHealth struct {
	// UnhealthySince is when a fatal Xid marked it; nil while healthy.
	UnhealthySince *time.Time
	// Reason is the mark's Xid, such as "Xid 79: GPU has fallen off the
	// bus"; empty while healthy.
	Reason string
	// LastXid is the newest Xid reported of it, fatal or not; 0 for none.
	LastXid int
	// LastXidAt is when the host read LastXid; nil for none.
	LastXidAt *time.Time
}

// Healthy reports whether the device may be placed on.
func (h GPUHealth) Healthy() bool { return h.UnhealthySince == nil }

// fatalXids are the Xids after which a device is not to be trusted with a
// guest until an operator looked: 48 double-bit ECC, 63 and 64 row
// remapping, 74 NVLink, 79 fallen off the bus, 92 high single-bit ECC
// rate, 94 and 95 contained and uncontained ECC, 119 and 120 GSP.
var fatalXids = map[int]bool{48: true, 63: true, 64: true, 74: true, 79: true, 92: true, 94: true, 95: true, 119: true, 120: true}

// FatalXid reports whether Xid code marks its device unhealthy.
func FatalXid(code int) bool { return fatalXids[code] }

// XidReason is the health reason an Xid gives a device: "Xid 79: GPU has
// fallen off the bus", or "Xid 79" without a message.
func XidReason(code int, message string) string {
	if message == "" {
		return fmt.Sprintf("Xid %d", code)
	}
	return fmt.Sprintf("Xid %d: %s", code, message)
}

// GPUFailedReason is the state reason of an instance holding an unhealthy
// device, kept while it holds it.
func GPUFailedReason(host, address, healthReason string) string {
	return fmt.Sprintf("GPU %s on host %s is unhealthy (%s): an operator must look at it", address, host, healthReason)
}

// pciAddress is a PCI address in the form the inventory and the API use:
// domain, bus, device and function in lowercase hex.
var pciAddress = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// IsPCIAddress reports whether s is a PCI address such as 0000:65:00.0.
func IsPCIAddress(s string) bool { return pciAddress.MatchString(s) }
