package proxmoxtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (e *Emulator) clone(r *request, srcID int) response {
	if bad := unknownParams(r, "newid", "name", "description", "full", "storage", "target", "format",
		"pool", "snapname", "bwlimit"); bad != nil {
		return *bad
	}
	src := e.vms[srcID]
	if src == nil {
		return e.noConfig(srcID)
	}
	if src.lock != "" {
		return locked(src)
	}
	errs := map[string]string{}
	newid, err := strconv.Atoi(r.params["newid"])
	switch s, present := r.params["newid"]; {
	case !present:
		errs["newid"] = "property is missing and it is not optional"
	case err != nil:
		errs["newid"] = fmt.Sprintf("type check ('integer') failed - got '%s'", s)
	case newid < 100 || newid > 999999999:
		errs["newid"] = "value must have a minimum value of 100"
	}
	name, hasName := r.params["name"]
	if hasName && !validDNSName(name) {
		errs["name"] = "invalid format - value does not look like a valid DNS name"
	}
	if f, present := r.params["full"]; present && f != "0" && f != "1" {
		errs["full"] = fmt.Sprintf("type check ('boolean') failed - got '%s'", f)
	}
	if len(errs) > 0 {
		return badParams(errs)
	}
	if e.vms[newid] != nil {
		return fail("VM %d already exists on node '%s'", newid, e.cfg.Node)
	}
	storage := e.cfg.Storage
	if s := r.params["storage"]; s != "" && s != e.cfg.Storage {
		return fail("storage '%s' does not exist", s)
	}
	if t := r.params["target"]; t != "" && t != e.cfg.Node {
		return fail("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", t, t)
	}
	if !hasName {
		name = "Copy-of-VM-" + src.name()
	}
	if e.countVMs() >= e.maxVMs {
		return ok(e.failTask(r.now, "qmclone", strconv.Itoa(srcID), r.user,
			fmt.Sprintf("clone failed: quota exceeded - maximum of %d VMs reached", e.maxVMs)).upid)
	}
	v := &vm{vmid: newid, node: e.cfg.Node, status: "stopped", lock: "clone",
		config: e.cloneConfig(src, newid, storage, name, r.params["description"])}
	e.vms[newid] = v
	t := e.startTask(r.now, "qmclone", strconv.Itoa(srcID), r.user, nil, e.cfg.TaskDuration, func() string {
		if e.vms[newid] == v {
			v.lock = ""
		}
		return "OK"
	})
	t.log = append(t.log, fmt.Sprintf("create full clone of drive scsi0 (%s)", src.config["scsi0"]))
	return ok(t.upid)
}

var diskKey = regexp.MustCompile(`^(ide|sata|scsi|virtio)\d+$|^efidisk0$|^tpmstate0$`)

// cloneConfig is the configuration of a clone of src: its own disks on
// storage, fresh MAC addresses, no template flag.
func (e *Emulator) cloneConfig(src *vm, newid int, storage, name, description string) map[string]string {
	cfg := map[string]string{}
	n := 0
	for _, k := range sortedKeys(src.config) {
		val := src.config[k]
		switch {
		case k == "template" || k == "name" || k == "description":
			continue
		case diskKey.MatchString(k) && strings.Contains(val, ":"):
			_, opts, _ := strings.Cut(val, ",")
			vol := fmt.Sprintf("%s:vm-%d-disk-%d", storage, newid, n)
			n++
			if strings.Contains(val, "cloudinit") {
				vol = fmt.Sprintf("%s:vm-%d-cloudinit", storage, newid)
				n--
			}
			if opts != "" {
				vol += "," + opts
			}
			val = vol
		case strings.HasPrefix(k, "net") && strings.Contains(val, "="):
			model, rest, _ := strings.Cut(val, "=")
			_, opts, _ := strings.Cut(rest, ",")
			val = model + "=" + e.nextMAC()
			if opts != "" {
				val += "," + opts
			}
		}
		cfg[k] = val
	}
	cfg["name"] = name
	if description != "" {
		cfg["description"] = description
	}
	return cfg
}

// numericKeys are the config keys GET config returns as JSON numbers.
var numericKeys = map[string]bool{"cores": true, "sockets": true, "vcpus": true, "template": true,
	"onboot": true, "balloon": true, "cpuunits": true, "protection": true, "numa": true, "acpi": true,
	"kvm": true, "tablet": true, "ciupgrade": true}

func (e *Emulator) getConfig(vmid int) response {
	v := e.vms[vmid]
	if v == nil {
		return e.noConfig(vmid)
	}
	out := map[string]any{"digest": digest(v.config)}
	for k, val := range v.config {
		if n, err := strconv.Atoi(val); err == nil && numericKeys[k] {
			out[k] = n
		} else {
			out[k] = val
		}
	}
	if v.lock != "" {
		out["lock"] = v.lock
	}
	return ok(out)
}

// digest is the SHA-1 of a configuration, as pve's config digest.
func digest(cfg map[string]string) string {
	h := sha1.New()
	for _, k := range sortedKeys(cfg) {
		fmt.Fprintf(h, "%s: %s\n", k, cfg[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// configKeys are the fixed config keys accepted; indexedKey adds the
// numbered devices.
var configKeys = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`name description tags cores sockets memory balloon vcpus cpu
		cpulimit cpuunits numa ostype scsihw boot bootdisk vga agent onboot protection bios machine kvm
		acpi tablet smbios1 vmgenid hotplug ciuser cipassword citype cicustom ciupgrade nameserver
		searchdomain sshkeys efidisk0 tpmstate0 args affinity hookscript startup`) {
		configKeys[k] = true
	}
}

var indexedKey = regexp.MustCompile(`^(ipconfig|net|scsi|virtio|ide|sata|unused|serial|usb|hostpci|numa|parallel)\d+$`)

// checkConfig validates config parameters against pve's schema, as far as
// the emulator knows it.
func checkConfig(params map[string]string, async bool) map[string]string {
	errs := map[string]string{}
	for k, val := range params {
		switch {
		case k == "delete" || k == "digest" || k == "skiplock" || k == "revert" || (async && k == "background_delay"):
		case !configKeys[k] && !indexedKey.MatchString(k):
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
		case k == "name" && !validDNSName(val):
			errs[k] = "invalid format - value does not look like a valid DNS name"
		case k == "cores" || k == "sockets" || k == "vcpus":
			if n, err := strconv.Atoi(val); err != nil {
				errs[k] = fmt.Sprintf("type check ('integer') failed - got '%s'", val)
			} else if n < 1 {
				errs[k] = "value must have a minimum value of 1"
			}
		case k == "memory":
			s := strings.TrimPrefix(val, "current=")
			if n, err := strconv.Atoi(s); err != nil {
				errs[k] = fmt.Sprintf("invalid format - type check ('integer') failed - got '%s'", val)
			} else if n < 16 {
				errs[k] = "invalid format - value must have a minimum value of 16"
			}
		case k == "sshkeys":
			if msg := checkURLEncoded(val); msg != "" {
				errs[k] = msg
			}
		case k == "tags":
			for _, t := range splitTags(val) {
				if !tagRE.MatchString(t) {
					errs[k] = fmt.Sprintf("invalid format - invalid characters in tag '%s'", t)
				}
			}
		case strings.HasPrefix(k, "ipconfig"):
			if msg := checkIPConfig(val); msg != "" {
				errs[k] = msg
			}
		}
	}
	return errs
}

func (e *Emulator) setConfig(r *request, vmid int, async bool) response {
	if errs := checkConfig(r.params, async); len(errs) > 0 {
		return badParams(errs)
	}
	v, bad := e.lookup(r, vmid)
	if bad != nil {
		return *bad
	}
	if d := r.params["digest"]; d != "" && d != digest(v.config) {
		return fail("detected modified configuration - file changed by other user? Try again.")
	}
	for _, k := range strings.FieldsFunc(r.params["delete"], func(c rune) bool { return c == ',' || c == ';' || c == ' ' }) {
		delete(v.config, k)
	}
	for k, val := range r.params {
		switch k {
		case "delete", "digest", "skiplock", "revert", "background_delay":
		case "tags":
			v.config[k] = strings.Join(splitTags(val), ";")
		case "memory":
			v.config[k] = strings.TrimPrefix(val, "current=")
		default:
			// A NIC given without a MAC address gets a fresh one.
			if model, opts, _ := strings.Cut(val, ","); strings.HasPrefix(k, "net") && !strings.Contains(model, "=") {
				val = model + "=" + e.nextMAC()
				if opts != "" {
					val += "," + opts
				}
			}
			v.config[k] = val
		}
	}
	if !async {
		return ok(nil)
	}
	return ok(e.startTask(r.now, "qmconfig", strconv.Itoa(vmid), r.user, nil, 0, nil).upid)
}

var sizeRE = regexp.MustCompile(`^(\+?)(\d+(?:\.\d+)?)([KMGT]?)$`)

func (e *Emulator) resize(r *request, vmid int) response {
	if bad := unknownParams(r, "disk", "size", "digest", "skiplock"); bad != nil {
		return *bad
	}
	disk, size := r.params["disk"], r.params["size"]
	errs := map[string]string{}
	if !diskKey.MatchString(disk) {
		errs["disk"] = fmt.Sprintf("value '%s' does not have a value in the enumeration", disk)
	}
	m := sizeRE.FindStringSubmatch(size)
	if m == nil {
		errs["size"] = fmt.Sprintf("value does not match the regex pattern - got '%s'", size)
	}
	if len(errs) > 0 {
		return badParams(errs)
	}
	v, bad := e.lookup(r, vmid)
	if bad != nil {
		return *bad
	}
	cur, present := v.config[disk]
	if !present {
		return fail("disk '%s' does not exist", disk)
	}
	num, _ := strconv.ParseFloat(m[2], 64)
	unit := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[3]]
	now := diskBytes(cur)
	want := int64(math.Round(num * unit))
	if m[1] == "+" {
		want += now
	}
	if want < now {
		return fail("shrinking disks is not supported")
	}
	if v.busy != nil {
		return ok(e.failTask(r.now, "resize", strconv.Itoa(vmid), r.user, lockTimeout(vmid)).upid)
	}
	return ok(e.startTask(r.now, "resize", strconv.Itoa(vmid), r.user, v, e.cfg.TaskDuration, func() string {
		v.config[disk] = setDiskSize(v.config[disk], want)
		return "OK"
	}).upid)
}

func (e *Emulator) start(r *request, vmid int) response {
	if bad := unknownParams(r, "skiplock", "timeout", "machine", "forceCPU", "migratedfrom",
		"migration_type", "migration_network", "stateuri", "targetstorage"); bad != nil {
		return *bad
	}
	v, bad := e.lookup(r, vmid)
	if bad != nil {
		return *bad
	}
	if v.template {
		return fail("you can't start a vm if it's a template")
	}
	id := strconv.Itoa(vmid)
	switch {
	case v.busy != nil:
		return ok(e.failTask(r.now, "qmstart", id, r.user, lockTimeout(vmid)).upid)
	case v.status != "stopped":
		return ok(e.failTask(r.now, "qmstart", id, r.user, fmt.Sprintf("VM %d already running", vmid)).upid)
	}
	return ok(e.startTask(r.now, "qmstart", id, r.user, v, e.cfg.TaskDuration, func() string {
		v.status = "running"
		v.started = time.Now()
		return "OK"
	}).upid)
}

func (e *Emulator) stop(r *request, vmid int) response {
	if bad := unknownParams(r, "skiplock", "timeout", "keepActive", "migratedfrom", "overrule-shutdown"); bad != nil {
		return *bad
	}
	v, bad := e.lookup(r, vmid)
	if bad != nil {
		return *bad
	}
	if b := v.busy; b != nil {
		if b.typ != "qmshutdown" || r.params["overrule-shutdown"] != "1" {
			return ok(e.failTask(r.now, "qmstop", strconv.Itoa(vmid), r.user, lockTimeout(vmid)).upid)
		}
		e.endTask(b, "interrupted by signal")
	}
	return ok(e.startTask(r.now, "qmstop", strconv.Itoa(vmid), r.user, v, e.cfg.TaskDuration, func() string {
		v.status = "stopped"
		return "OK"
	}).upid)
}

// reboot is an ACPI reboot: the guest restarts, the VM stays running.
func (e *Emulator) reboot(r *request, vmid int) response {
	if bad := unknownParams(r, "timeout"); bad != nil {
		return *bad
	}
	v, bad := e.lookup(r, vmid)
	if bad != nil {
		return *bad
	}
	if v.status != "running" {
		return fail("VM %d not running", vmid)
	}
	id := strconv.Itoa(vmid)
	if v.busy != nil {
		return ok(e.failTask(r.now, "qmreboot", id, r.user, lockTimeout(vmid)).upid)
	}
	return ok(e.startTask(r.now, "qmreboot", id, r.user, v, e.cfg.TaskDuration, func() string { return "OK" }).upid)
}

func (e *Emulator) shutdown(r *request, vmid int) response {
	if bad := unknownParams(r, "skiplock", "timeout", "forceStop", "keepActive"); bad != nil {
		return *bad
	}
	timeout := 60 * time.Second
	if s, present := r.params["timeout"]; present {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return badParams(map[string]string{"timeout": fmt.Sprintf("type check ('integer') failed - got '%s'", s)})
		}
		if n > 0 {
			timeout = time.Duration(n) * time.Second
		}
	}
	v, bad := e.lookup(r, vmid)
	if bad != nil {
		return *bad
	}
	if v.status == "stopped" {
		return fail("VM %d not running", vmid)
	}
	id := strconv.Itoa(vmid)
	if v.busy != nil {
		return ok(e.failTask(r.now, "qmshutdown", id, r.user, lockTimeout(vmid)).upid)
	}
	if e.cfg.IgnoreShutdown {
		force := r.params["forceStop"] == "1"
		return ok(e.startTask(r.now, "qmshutdown", id, r.user, v, timeout, func() string {
			if force {
				v.status = "stopped"
				return "OK"
			}
			return "VM quit/powerdown failed - got timeout"
		}).upid)
	}
	return ok(e.startTask(r.now, "qmshutdown", id, r.user, v, e.cfg.TaskDuration, func() string {
		v.status = "stopped"
		return "OK"
	}).upid)
}

func (e *Emulator) destroy(r *request, vmid int) response {
	if bad := unknownParams(r, "purge", "destroy-unreferenced-disks", "skiplock"); bad != nil {
		return *bad
	}
	v, bad := e.lookup(r, vmid)
	if bad != nil {
		return *bad
	}
	if v.status != "stopped" {
		return fail("VM %d is running - destroy failed", vmid)
	}
	id := strconv.Itoa(vmid)
	if v.busy != nil {
		return ok(e.failTask(r.now, "qmdestroy", id, r.user, lockTimeout(vmid)).upid)
	}
	return ok(e.startTask(r.now, "qmdestroy", id, r.user, v, e.cfg.TaskDuration, func() string {
		if e.vms[vmid] == v {
			delete(e.vms, vmid)
		}
		return "OK"
	}).upid)
}

// Helpers.

var dnsLabel = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

// validDNSName is pve's dns-name format.
func validDNSName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !dnsLabel.MatchString(l) {
			return false
		}
	}
	return true
}

var urlEncodedRE = regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`)

// checkURLEncoded is pve's urlencoded format: every reserved character
// percent-encoded, so '+' for a space (form encoding) is refused.
func checkURLEncoded(s string) string {
	if !urlEncodedRE.MatchString(s) {
		return "invalid format - invalid urlencoded string: " + s
	}
	if _, err := url.PathUnescape(s); err != nil {
		return "invalid format - invalid urlencoded string: " + s
	}
	return ""
}

// checkIPConfig validates a cloud-init ipconfigN value.
func checkIPConfig(s string) string {
	for _, part := range strings.Split(s, ",") {
		k, v, found := strings.Cut(part, "=")
		if !found {
			return "invalid format - format error: " + part
		}
		switch k {
		case "ip":
			if _, err := netip.ParsePrefix(v); v != "dhcp" && (err != nil || !strings.Contains(v, ".")) {
				return "invalid format - ip: value does not look like a valid IPv4 network configuration"
			}
		case "ip6":
			if _, err := netip.ParsePrefix(v); v != "dhcp" && v != "auto" && (err != nil || !strings.Contains(v, ":")) {
				return "invalid format - ip6: value does not look like a valid IPv6 network configuration"
			}
		case "gw", "gw6":
			if _, err := netip.ParseAddr(v); err != nil {
				return fmt.Sprintf("invalid format - %s: value does not look like a valid IP address", k)
			}
		default:
			return fmt.Sprintf("invalid format - property '%s' is not defined in the format", k)
		}
	}
	return ""
}

var tagRE = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_\-+.]*$`)

// splitTags splits a tags value as pve does, on ';', ',' and spaces.
func splitTags(s string) []string {
	return strings.FieldsFunc(s, func(c rune) bool { return c == ';' || c == ',' || c == ' ' })
}

var sizeOpt = regexp.MustCompile(`(^|,)size=(\d+(?:\.\d+)?)([KMGT]?)(,|$)`)

// diskBytes is the size= of a disk value, in bytes.
func diskBytes(val string) int64 {
	m := sizeOpt.FindStringSubmatch(val)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseFloat(m[2], 64)
	unit := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[3]]
	return int64(math.Round(n * unit))
}

func diskGB(val string) int64 { return diskBytes(val) >> 30 }

// setDiskSize rewrites a disk value's size=.
func setDiskSize(val string, bytes int64) string {
	var s string
	switch {
	case bytes%(1<<30) == 0:
		s = fmt.Sprintf("%dG", bytes>>30)
	case bytes%(1<<20) == 0:
		s = fmt.Sprintf("%dM", bytes>>20)
	case bytes%(1<<10) == 0:
		s = fmt.Sprintf("%dK", bytes>>10)
	default:
		s = strconv.FormatInt(bytes, 10)
	}
	if sizeOpt.MatchString(val) {
		return sizeOpt.ReplaceAllString(val, "${1}size="+s+"${4}")
	}
	return val + ",size=" + s
}

func memoryMB(val string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(val, "current="), 10, 64)
	return n
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedIDs(m map[int]*vm) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
