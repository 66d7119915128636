// Package proxmoxtest emulates the part of the Proxmox VE API that the
// proxmox driver beside it uses, statefully and in memory, closely enough
// that the real go-proxmox client can be driven against it in tests and in
// `better-compute dev`: API-token authentication, VMID allocation, cloning
// a template, VM configuration (cloud-init included), disk resize, power
// actions, deletion, and the tasks (UPIDs) all of these run as. Its
// failures are injected with cloudtest (Emulator.Faults).
//
// Every response is wrapped as Proxmox wraps it, {"data": ...}. Errors are
// shaped as pveproxy shapes them: the message is the HTTP status line's
// reason phrase ("500 VM 101 already exists on node 'pve'") with
// {"data":null} as the body, and parameter errors are 400 "Parameter
// verification failed." with {"errors":{"param":"message"}}. The status
// line is what go-proxmox turns into the error of a 500, so the emulator
// writes its own status line (it hijacks the connection; over HTTP/2 it
// falls back to the standard reason phrase and a "message" in the body).
//
// Time-driven state: a task runs for Config.TaskDuration and its effect
// (the clone unlocked, the VM running or stopped, the VM gone) applies when
// it ends; state is brought up to date on every request and every test
// hook, so there are no background goroutines.
//
//	call                         sync error (500)                   task
//	clone {newid,name,...}       source missing, newid in use,      qmclone: target exists, stopped,
//	                             unknown storage or target node     locked "clone" until the end;
//	                                                                 over MaxVMs the task fails
//	                                                                 (no target is made)
//	PUT/POST config              missing, locked                    POST: qmconfig (applied at once)
//	PUT resize {disk,size}       missing, locked, no such disk,     resize
//	                             shrinking
//	status/start                 missing, locked, template          qmstart: running at the end;
//	                                                                 fails if already running
//	status/shutdown {timeout}    missing, locked, not running       qmshutdown: stopped at the end;
//	                                                                 with IgnoreShutdown it fails
//	                                                                 after timeout (default 60 s)
//	status/reboot                missing, locked, not running       qmreboot: running throughout;
//	status/stop                  missing, locked                    qmstop: stopped at the end;
//	  {overrule-shutdown}                                            aborts a running shutdown
//	DELETE {purge,...}           missing, locked, running           qmdestroy: gone at the end
//
// A power action or deletion asked while another task of the same VM runs
// fails its task with "can't lock file ... got timeout", as pve's file lock
// does (stop with overrule-shutdown=1 aborts a running shutdown instead).
//
// MaxVMs is not a Proxmox feature: Proxmox has no VM count quota. The
// emulator stands in for a node out of room with a clone task that fails
// with "clone failed: quota exceeded - maximum of N VMs reached".
package proxmoxtest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/better-compute/vps/drivers/cloud/cloudtest"
)

// Config configures an Emulator. Zero fields take the defaults (see
// defaults).
type Config struct {
	// TokenID is the only API token accepted, as USER@REALM!TOKENID.
	// Default "root@pam!better-compute".
	TokenID string
	// Secret is the token's secret. Default
	// "6f1a9c52-3d7e-4b8a-9e21-0c5d7f3b2a10".
	Secret string
	// AuthFailureDelay delays every 401, as pveproxy does by about 3 s.
	// Default 0.
	AuthFailureDelay time.Duration
	// Node is the name of the cluster's one node. Default "pve".
	Node string
	// Storage is the one storage clones may go to. Default "local-lvm".
	Storage string
	// Templates are the VMIDs of the template VMs that exist at the start.
	// Default {9000}.
	Templates []int
	// TemplateDiskGB is the size of a template's disk (scsi0), which its
	// clones inherit. Default 2.
	TemplateDiskGB int
	// TaskDuration is how long a task runs. Default 50 ms.
	TaskDuration time.Duration
	// MaxVMs is how many VMs (templates not counted) may exist; a clone
	// beyond it fails its task. Default 1000.
	MaxVMs int
	// IgnoreShutdown makes guests ignore ACPI shutdown: a shutdown task
	// runs until its timeout and fails.
	IgnoreShutdown bool
}

// The defaults of Config.
const (
	DefaultTokenID = "root@pam!better-compute"
	DefaultSecret  = "6f1a9c52-3d7e-4b8a-9e21-0c5d7f3b2a10"
	DefaultNode    = "pve"
	DefaultStorage = "local-lvm"
	// DefaultTemplate is the template that exists when Config.Templates is
	// empty.
	DefaultTemplate     = 9000
	DefaultTaskDuration = 50 * time.Millisecond
	DefaultMaxVMs       = 1000
)

// defaults returns c with its zero fields set to the defaults.
func (c Config) defaults() Config {
	if c.TokenID == "" {
		c.TokenID = DefaultTokenID
	}
	if c.Secret == "" {
		c.Secret = DefaultSecret
	}
	if c.Node == "" {
		c.Node = DefaultNode
	}
	if c.Storage == "" {
		c.Storage = DefaultStorage
	}
	if len(c.Templates) == 0 {
		c.Templates = []int{DefaultTemplate}
	}
	c.Templates = slices.Clone(c.Templates)
	if c.TemplateDiskGB <= 0 {
		c.TemplateDiskGB = 2
	}
	if c.TaskDuration <= 0 {
		c.TaskDuration = DefaultTaskDuration
	}
	if c.MaxVMs <= 0 {
		c.MaxVMs = DefaultMaxVMs
	}
	return c
}

// Emulator is a stateful Proxmox VE API. It is safe for concurrent use.
type Emulator struct {
	cfg    Config
	faults *cloudtest.Injector

	mu      sync.Mutex
	vms     map[int]*vm
	tasks   map[string]*task
	pid     int
	macs    int
	maxVMs  int
	handler http.Handler
}

// vm is a QEMU guest.
type vm struct {
	vmid     int
	node     string
	status   string // running, stopped or paused
	template bool
	// lock is the config lock ("clone"), empty when unlocked.
	lock string
	// config is the VM's configuration as GET config returns it, name and
	// tags included; values are as stored (sshkeys percent-encoded).
	config map[string]string
	// busy is the task holding the VM's file lock, if any.
	busy    *task
	started time.Time
}

func (v *vm) name() string { return v.config["name"] }

// New returns an Emulator with cfg's templates and no other VM.
func New(cfg Config) *Emulator {
	cfg = cfg.defaults()
	e := &Emulator{
		cfg:    cfg,
		faults: cloudtest.New(),
		vms:    map[int]*vm{},
		tasks:  map[string]*task{},
		pid:    0x1000,
		maxVMs: cfg.MaxVMs,
	}
	for _, id := range cfg.Templates {
		e.vms[id] = &vm{vmid: id, node: cfg.Node, status: "stopped", template: true, config: map[string]string{
			"name":      fmt.Sprintf("tmpl-%d", id),
			"template":  "1",
			"cores":     "1",
			"sockets":   "1",
			"memory":    "2048",
			"ostype":    "l26",
			"scsihw":    "virtio-scsi-single",
			"scsi0":     fmt.Sprintf("%s:base-%d-disk-0,size=%dG", cfg.Storage, id, cfg.TemplateDiskGB),
			"ide2":      fmt.Sprintf("%s:vm-%d-cloudinit,media=cdrom", cfg.Storage, id),
			"net0":      "virtio=" + e.nextMAC() + ",bridge=vmbr0",
			"boot":      "order=scsi0",
			"serial0":   "socket",
			"vga":       "serial0",
			"ipconfig0": "ip=dhcp",
		}}
	}
	e.handler = e.faults.Wrap(http.HandlerFunc(e.serve))
	return e
}

// Handler serves the API under /api2/json, behind the fault injector.
func (e *Emulator) Handler() http.Handler { return e.handler }

// Faults is the injector in front of the API, with its call counter.
func (e *Emulator) Faults() *cloudtest.Injector { return e.faults }

// Config returns the emulator's configuration, defaults applied.
func (e *Emulator) Config() Config {
	c := e.cfg
	c.Templates = slices.Clone(c.Templates)
	return c
}

// VMView is what a test sees of a VM.
type VMView struct {
	VMID     int
	Name     string
	Node     string
	Status   string
	Template bool
	// Lock is the config lock ("clone"), empty when unlocked.
	Lock string
	Tags []string
	// Config is the VM's configuration as stored: sshkeys stays
	// percent-encoded, as GET config returns it.
	Config map[string]string
}

// VMs returns every VM, templates included, by VMID.
func (e *Emulator) VMs() []VMView {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance(time.Now())
	ids := make([]int, 0, len(e.vms))
	for id := range e.vms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]VMView, 0, len(ids))
	for _, id := range ids {
		v := e.vms[id]
		cfg := make(map[string]string, len(v.config))
		for k, val := range v.config {
			cfg[k] = val
		}
		out = append(out, VMView{VMID: v.vmid, Name: v.name(), Node: v.node, Status: v.status,
			Template: v.template, Lock: v.lock, Tags: splitTags(v.config["tags"]), Config: cfg})
	}
	return out
}

// VM returns one VM, and whether it exists.
func (e *Emulator) VM(vmid int) (VMView, bool) {
	for _, v := range e.VMs() {
		if v.VMID == vmid {
			return v, true
		}
	}
	return VMView{}, false
}

// AddVM makes a stopped VM behind the client's back, as another user of the
// cluster would, and returns its VMID. Tags are stored as given (joined by
// ";").
func (e *Emulator) AddVM(name string, tags []string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance(time.Now())
	id := e.nextFreeID()
	cfg := map[string]string{"name": name, "cores": "1", "memory": "512",
		"net0": "virtio=" + e.nextMAC() + ",bridge=vmbr0"}
	if len(tags) > 0 {
		cfg["tags"] = strings.Join(tags, ";")
	}
	e.vms[id] = &vm{vmid: id, node: e.cfg.Node, status: "stopped", config: cfg}
	return id
}

// DeleteVM removes a VM at once behind the client's back; it reports
// whether the VM existed.
func (e *Emulator) DeleteVM(vmid int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance(time.Now())
	_, ok := e.vms[vmid]
	delete(e.vms, vmid)
	return ok
}

// SetStatus sets a VM's status ("running", "stopped" or "paused") behind
// the client's back; it reports whether the VM exists.
func (e *Emulator) SetStatus(vmid int, status string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance(time.Now())
	v, ok := e.vms[vmid]
	if ok {
		v.status = status
	}
	return ok
}

// SetMaxVMs changes how many VMs (templates not counted) may exist.
func (e *Emulator) SetMaxVMs(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.maxVMs = n
}

// nextFreeID is the lowest free VMID from 100, as /cluster/nextid reports.
func (e *Emulator) nextFreeID() int {
	id := 100
	for e.vms[id] != nil {
		id++
	}
	return id
}

// nextMAC returns a fresh MAC address in Proxmox's BC:24:11 prefix.
func (e *Emulator) nextMAC() string {
	e.macs++
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", (e.macs>>16)&0xff, (e.macs>>8)&0xff, e.macs&0xff)
}

// countVMs counts the VMs that are not templates.
func (e *Emulator) countVMs() int {
	n := 0
	for _, v := range e.vms {
		if !v.template {
			n++
		}
	}
	return n
}
