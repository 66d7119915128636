package proxmox

import (
	"regexp"
	"strings"

	"github.com/better-compute/vps/drivers/cloud"
)

// Identity. The instance ID must be recoverable from what the clone call
// itself sets, so that a create that dies between the clone and the
// configuration never leaves a VM we cannot attribute: the clone's name is
// NamePrefix followed by the instance ID, with "_" written "--" (a name is
// a DNS name: letters, digits, hyphens). A UUID, "0190c3e2-…", gives
// "bc-0190c3e2-…"; an API ID, "ins_0c2f…", gives "bc-ins--0c2f…".
//
// Tag (cloud.Label, "better-compute-instance") is set with the rest of
// the configuration, in one config update, so it marks a VM whose
// configuration is complete. List reports every non-template VM whose name
// parses as ours; one still locked by its clone is starting, one without
// the tag is half made (the create stopped before configuring it) and is
// reported StatusUnknown: it has neither the instance's size nor its SSH
// keys, so it should be deleted and created again, never started. A VM
// carrying the tag under another name cannot be attributed and is not
// listed.
//
// Proxmox uses the VM's name as the guest's hostname (cloud-init), so the
// guest is called bc-<id>; CreateRequest.Name goes into the description.
//
// A provider bootstrap's machine is named BootstrapPrefix followed by the
// bootstrap's ID and tagged BootstrapTag: a name List does not parse, so the
// provider sweep never sees it; FindBootstrap finds it.
const (
	NamePrefix      = "bc-"
	Tag             = cloud.Label
	BootstrapPrefix = "bcb-"
	BootstrapTag    = cloud.BootstrapLabel
)

// idRE is the instance IDs a name can carry: lower-case letters and digits
// in runs joined by single "-" or "_".
var idRE = regexp.MustCompile(`^[a-z0-9]+([-_][a-z0-9]+)*$`)

// nameRE is the names VMName makes.
var nameRE = regexp.MustCompile(`^bc-[a-z0-9]+(-{1,2}[a-z0-9]+)*$`)

// VMName returns the VM name that carries instanceID; ok is false when the
// ID cannot be carried (see idRE) or the name would be longer than a DNS
// label's 63 characters.
func VMName(instanceID string) (name string, ok bool) {
	if !idRE.MatchString(instanceID) {
		return "", false
	}
	name = NamePrefix + strings.ReplaceAll(instanceID, "_", "--")
	return name, len(name) <= 63
}

// InstanceID returns the instance ID a VM name carries, if it is one of
// ours.
func InstanceID(name string) (string, bool) {
	if !nameRE.MatchString(name) || len(name) > 63 {
		return "", false
	}
	return strings.ReplaceAll(strings.TrimPrefix(name, NamePrefix), "--", "_"), true
}

// BootstrapVMName returns the VM name that carries a bootstrap's ID (a
// UUID), ok false when it cannot be carried.
func BootstrapVMName(bootstrapID string) (name string, ok bool) {
	name = BootstrapPrefix + bootstrapID
	return name, bootstrapRE.MatchString(name)
}

// BootstrapID returns the bootstrap ID a VM name carries, if it is a
// bootstrap's.
func BootstrapID(name string) (string, bool) {
	if !bootstrapRE.MatchString(name) {
		return "", false
	}
	return strings.TrimPrefix(name, BootstrapPrefix), true
}

// bootstrapRE is the names BootstrapVMName makes: the prefix and a UUID.
var bootstrapRE = regexp.MustCompile(`^bcb-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// hasTag reports whether a tags value (";"-separated, though pve also
// splits on "," and spaces) holds tag.
func hasTag(tags, tag string) bool {
	for _, t := range strings.FieldsFunc(tags, func(c rune) bool { return c == ';' || c == ',' || c == ' ' }) {
		if t == tag {
			return true
		}
	}
	return false
}
