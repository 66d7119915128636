// Package proxmox is the cloud.Driver of Proxmox VE, on the go-proxmox
// client: a server is a full clone of a template VM, configured through
// cloud-init (cores, memory, SSH keys, ipconfig0), on one node of the
// cluster. Its ID is its VMID.
//
// Identity: see identity.go (name "bc-<instance ID>", tag
// "better-compute-instance").
//
// Calls in the normal case (N: task status polls, one per PollInterval
// while the task runs). "[status/current]" is made only when the VM is not
// in a listing younger than ListingMaxAge, and "[nextid]" only when there
// is no such listing (listing.go): the reconciler's sweep and the look-up
// before each create list the cluster, so normally neither is made.
//
//	List    1   GET /cluster/resources?type=vm
//	Find    1   the same, filtered by instance ID
//	Create  2 + N, + 1 + N with DiskGB, + 1 with PowerOn: [GET /cluster/nextid],
//	        POST clone, polls, [PUT resize, polls], PUT config, [POST status/start]
//	Start   1: [status/current], POST status/start; none while a start it
//	        asked is under way
//	Stop    1: [status/current], POST status/shutdown {timeout,
//	        forceStop=1}; none while that shutdown is under way
//	Delete  1: [status/current], DELETE ?purge=1&destroy-unreferenced-disks=1;
//	        a running VM + 1: POST status/stop {overrule-shutdown=1}, and the
//	        DELETE a PollInterval later (refused while the VM runs: then
//	        polls of the stop, and the DELETE again). A bootstrap's VM + N:
//	        the delete task is waited for.
//
// Start and Stop, and Create's start, do not wait for their tasks: the
// next List shows the VM running or stopped (cloud.Asked). pve's
// shutdown with forceStop=1 powers the VM off itself when the guest
// ignores ACPI for the timeout, so no second call is needed for that.
// Nor does an instance's Delete wait for its delete task: pve removes the
// VM when the task ends, and a VM whose delete failed is still listed, an
// orphan the sweep deletes after its grace.
//
// Create does not wait for the start task: the server is returned
// starting. Stop's overrule-shutdown needs Proxmox VE 8.1 or later.
//
// Statuses: List maps pve's "running" to running and "stopped" to stopped,
// a VM locked by its clone to starting, and anything else to unknown. pve
// tells a paused VM from a running one only in status/current
// (qmpstatus), which List does not read: a paused VM is listed as running.
// Addresses are always empty: Proxmox knows a VM's addresses only through
// the QEMU guest agent, which would cost a call per VM.
//
// User data: not supported. Proxmox takes custom cloud-init user data only
// as a "snippets" file on a storage (cicustom=user=local:snippets/…), and
// its API has no way to upload one, so Create refuses a request with
// UserData as Invalid rather than drop it silently. A request with a
// SeedURL instead gets it as the VM's SMBIOS serial (smbios1, SeedSMBIOS),
// from which cloud-init's NoCloud datasource fetches the user data over
// HTTP: how a provider bootstrap's machine gets its join script.
//
// Bootstraps: a CreateRequest with BootstrapID makes a VM named
// "bcb-<bootstrap ID>" tagged "better-compute-bootstrap" (identity.go),
// sized by its ServerType, "<vCPUs>x<memory MiB>". The SSH keys go through
// Proxmox's own cloud-init (sshkeys), for the image's default user unless
// Config.CIUser names another.
//
// Disk: with DiskGB, the template's boot disk (Config.Disk) is resized to
// DiskGB GiB; when the template's disk is already larger, Proxmox refuses
// to shrink it and the clone keeps the larger disk.
//
// Errors are classified (errors.go): 401/403 are Refused, 400 Invalid, 404 and
// "does not exist" NotFound (Invalid in Create, where it means the
// template, storage or node is missing), "already exists" (two creates
// given the same VMID; a VMID chosen from the listing is retried with the
// next), locks, 5xx, timeouts and network
// errors Retryable, 429 RateLimited, and "quota", "insufficient free space"
// or "No space left on device" Quota. Messages are Proxmox's words; the
// token's secret is never part of an error.
package proxmox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pve "github.com/luthermonson/go-proxmox"

	"github.com/better-compute/vps/drivers/cloud"
)

// Config configures a Driver. Zero fields take the defaults (see New).
type Config struct {
	// Endpoint is the API URL, such as https://pve.example.com:8006/api2/json;
	// "/api2/json" is added when the path does not end with it.
	Endpoint string
	// Token is the API token, USER@REALM!TOKENID=SECRET.
	Token string
	// Node is the node VMs are cloned on and acted on. Default "pve".
	Node string
	// Storage is where the full clones' disks go. Default "local-lvm".
	Storage string
	// Template is the VMID of the template cloned when CreateRequest.Image
	// is empty (Image, when set, is a template VMID).
	Template int
	// Disk is the template's boot disk, resized to CreateRequest.DiskGB.
	// Default "scsi0".
	Disk string
	// CIUser is the cloud-init user the SSH keys are installed for. Default
	// empty: the image's default user, as with the NoCloud seeds of hosts.
	CIUser string
	// IPConfig is the VM's cloud-init ipconfig0. Default "ip=dhcp".
	IPConfig string
	// Bridge, when set, replaces the template's NIC (net0) by a virtio NIC
	// on this bridge; by default the clone keeps the template's NIC with a
	// fresh MAC address.
	Bridge string
	// HTTPClient makes the requests; it is copied, not changed. Default: a
	// client on Transport with TLS handshake and response header timeouts.
	HTTPClient *http.Client
	// Transport is what the default client is made on: it is cloned, and
	// the clone gets the timeouts and TLS settings. The reconciler passes
	// cloud.Endpoints' transport, which checks every address dialled.
	// Default: http.DefaultTransport's with a 10 s dial timeout. Ignored
	// with HTTPClient.
	Transport *http.Transport
	// InsecureSkipVerify turns off TLS certificate verification of the
	// default client, for a lab node's self-signed certificate. Ignored
	// with HTTPClient (give that one the node's CA instead).
	InsecureSkipVerify bool
	// Timeout bounds each request. Default 30 s.
	Timeout time.Duration
	// PollInterval is how often a task's status is polled. Default 500 ms.
	PollInterval time.Duration
	// ShutdownTimeout is how long Stop waits for an ACPI shutdown before
	// it powers the VM off. Default 60 s.
	ShutdownTimeout time.Duration
	// TaskTimeout bounds the wait for any other task (clone, start, stop,
	// delete). Default 10 min.
	TaskTimeout time.Duration
	// ListingMaxAge is how long the last /cluster/resources read stands in
	// for a VM's status/current read and for /cluster/nextid (listing.go).
	// Default 15 s: more than the reconciler's sweep interval (10 s), so
	// the sweep's listing serves its calls. A negative value turns it off.
	ListingMaxAge time.Duration
}

// Driver is a cloud.Driver for one Proxmox VE node.
type Driver struct {
	cfg     Config
	client  *pve.Client
	cloneMu sync.Mutex // see clone
	// asked are the power changes under way (Create, Start, Stop).
	asked cloud.Asked
	// listed is the last listing's VMs (listing.go).
	listed listing
}

var _ cloud.Driver = (*Driver)(nil)

// New returns a driver for cfg. It makes no request.
func New(cfg Config) (*Driver, error) {
	u, err := url.Parse(strings.TrimRight(cfg.Endpoint, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("proxmox: Endpoint must be the API URL, such as https://pve.example.com:8006/api2/json")
	}
	if !strings.HasSuffix(u.Path, "/api2/json") {
		u.Path += "/api2/json"
	}
	cfg.Endpoint = u.String()
	tokenID, secret, found := strings.Cut(cfg.Token, "=")
	if !found || secret == "" || !strings.Contains(tokenID, "@") || !strings.Contains(tokenID, "!") {
		// Never echo the token: it holds the secret.
		return nil, errors.New("proxmox: Token must be an API token, USER@REALM!TOKENID=SECRET")
	}
	if cfg.Node == "" {
		cfg.Node = "pve"
	}
	if cfg.Storage == "" {
		cfg.Storage = "local-lvm"
	}
	if cfg.Disk == "" {
		cfg.Disk = "scsi0"
	}
	if cfg.IPConfig == "" {
		cfg.IPConfig = "ip=dhcp"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 500 * time.Millisecond
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 60 * time.Second
	}
	if cfg.TaskTimeout <= 0 {
		cfg.TaskTimeout = 10 * time.Minute
	}
	if cfg.ListingMaxAge == 0 {
		cfg.ListingMaxAge = 15 * time.Second
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	} else {
		var tr *http.Transport
		if cfg.Transport != nil {
			tr = cfg.Transport.Clone()
		} else {
			tr = http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		tr.TLSHandshakeTimeout = 10 * time.Second
		tr.ResponseHeaderTimeout = cfg.Timeout
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify}
		hc.Transport = tr
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = statusTransport{base: base}
	client := pve.NewClient(cfg.Endpoint,
		pve.WithHTTPClient(&hc),
		pve.WithAPIToken(tokenID, secret),
		pve.WithUserAgent("better-compute"))
	return &Driver{cfg: cfg, client: client}, nil
}

// Budget is zero: Proxmox states no rate limit.
func (d *Driver) Budget() cloud.Budget { return cloud.Budget{} }

// call runs one request bounded by the request timeout and classifies its
// error.
func (d *Driver) call(ctx context.Context, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	err := f(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return &cloud.Error{Kind: cloud.Retryable,
			Message: fmt.Sprintf("no answer from Proxmox within %s", d.cfg.Timeout), Err: err}
	}
	return classify(err)
}

// vm is a handle on a VM of the node; it makes no request.
func (d *Driver) vm(vmid int) *pve.VirtualMachine {
	v := &pve.VirtualMachine{}
	v.New(d.client, d.cfg.Node, vmid)
	return v
}

func (d *Driver) vmPath(vmid int) string { return fmt.Sprintf("/nodes/%s/qemu/%d", d.cfg.Node, vmid) }

// wait polls t until it ends, returning its error exit status as a
// classified error; ended is false when max passed first. Up to three
// retryable poll failures in a row are tolerated.
func (d *Driver) wait(ctx context.Context, t *pve.Task, max time.Duration) (ended bool, err error) {
	if t == nil {
		return true, nil
	}
	node := t.Node
	if node == "" {
		node = d.cfg.Node
	}
	path := fmt.Sprintf("/nodes/%s/tasks/%s/status", node, t.UPID)
	deadline := time.Now().Add(max)
	failures := 0
	for {
		timer := time.NewTimer(d.cfg.PollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false, classify(ctx.Err())
		case <-timer.C:
		}
		var st struct {
			Status     string `json:"status"`
			ExitStatus string `json:"exitstatus"`
		}
		err := d.call(ctx, func(ctx context.Context) error { return d.client.Get(ctx, path, &st) })
		switch {
		case err != nil && is(err, cloud.Retryable) && failures < 3 && time.Now().Before(deadline):
			failures++
			continue
		case err != nil:
			return false, err
		}
		failures = 0
		if st.Status == "stopped" {
			if st.ExitStatus == "OK" || strings.HasPrefix(st.ExitStatus, "WARNINGS") {
				return true, nil
			}
			return true, classify(&taskError{UPID: t.UPID, Exit: st.ExitStatus})
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
	}
}

// run waits for t within TaskTimeout; a task still running then is a
// retryable error.
func (d *Driver) run(ctx context.Context, t *pve.Task, what string) error {
	ended, err := d.wait(ctx, t, d.cfg.TaskTimeout)
	if err == nil && !ended {
		return &cloud.Error{Kind: cloud.Retryable,
			Message: fmt.Sprintf("%s (task %s) still running after %s", what, t.UPID, d.cfg.TaskTimeout)}
	}
	return err
}

// parseID reads a server ID, a VMID.
func parseID(serverID string) (int, error) {
	id, err := strconv.Atoi(serverID)
	if err != nil || id < 100 {
		return 0, invalid("%q is not a Proxmox VMID", serverID)
	}
	return id, nil
}

// vmOf returns the VMID of ref and its pve status ("running",
// "stopped"), NotFound when that VM is not ref's instance's: Proxmox gives
// a deleted VM's ID to the next clone, so a call retried by ID could
// otherwise reach another instance's VM (cloud.Ref).
func (d *Driver) vmOf(ctx context.Context, ref cloud.Ref) (vmid int, status string, err error) {
	if vmid, err = parseID(ref.ID); err != nil {
		return 0, "", err
	}
	var st struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	}
	if v, ok := d.listed.vm(vmid, d.cfg.ListingMaxAge); ok && !ref.Fresh {
		st.Name, st.Status = v.name, v.status
	} else if err := d.call(ctx, func(ctx context.Context) error {
		return d.client.Get(ctx, d.vmPath(vmid)+"/status/current", &st)
	}); err != nil {
		return 0, "", err
	}
	if ref.BootstrapID != "" {
		if id, ours := BootstrapID(st.Name); !ours || id != ref.BootstrapID {
			return 0, "", &cloud.Error{Kind: cloud.NotFound, Message: fmt.Sprintf("VM %d is not bootstrap %s's", vmid, ref.BootstrapID)}
		}
		return vmid, st.Status, nil
	}
	if id, ours := InstanceID(st.Name); !ours || id != ref.InstanceID {
		return 0, "", &cloud.Error{Kind: cloud.NotFound, Message: fmt.Sprintf("VM %d is not instance %s's", vmid, ref.InstanceID)}
	}
	return vmid, st.Status, nil
}

// resource is a row of /cluster/resources, the fields List reads
// (go-proxmox's ClusterResource has no lock).
type resource struct {
	Type     string             `json:"type"`
	VMID     pve.StringOrUint64 `json:"vmid"`
	Name     string             `json:"name"`
	Node     string             `json:"node"`
	Status   string             `json:"status"`
	Tags     string             `json:"tags"`
	Template pve.StringOrUint64 `json:"template"`
	Lock     string             `json:"lock"`
}

// List returns our instances' VMs on every node of the cluster, in one
// call; bootstraps' VMs are not among them.
func (d *Driver) List(ctx context.Context) ([]cloud.Server, error) {
	return d.list(ctx, func(name string) (cloud.Server, bool) {
		id, ours := InstanceID(name)
		return cloud.Server{InstanceID: id}, ours
	}, Tag)
}

// FindBootstrap returns the VMs carrying bootstrapID, in one call.
func (d *Driver) FindBootstrap(ctx context.Context, bootstrapID string) ([]cloud.Server, error) {
	return d.list(ctx, func(name string) (cloud.Server, bool) {
		id, ours := BootstrapID(name)
		return cloud.Server{BootstrapID: id}, ours && id == bootstrapID
	}, BootstrapTag)
}

// list returns the non-template VMs of the cluster whose name owner
// attributes (and fills the server's owner from), marked incomplete without
// tag.
func (d *Driver) list(ctx context.Context, owner func(name string) (cloud.Server, bool), tag string) ([]cloud.Server, error) {
	var rs []resource
	began := time.Now()
	if err := d.call(ctx, func(ctx context.Context) error {
		return d.client.Get(ctx, "/cluster/resources?type=vm", &rs)
	}); err != nil {
		return nil, err
	}
	d.listed.fill(began, rs)
	out := []cloud.Server{}
	for _, r := range rs {
		if r.Type != "qemu" || r.Template != 0 {
			continue
		}
		srv, ours := owner(r.Name)
		if !ours {
			continue
		}
		srv.ID, srv.Status, srv.Incomplete = strconv.FormatUint(uint64(r.VMID), 10), status(r, tag), incomplete(r, tag)
		out = append(out, srv)
	}
	slices.SortFunc(out, func(a, b cloud.Server) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Find returns our VMs carrying instanceID, from the same one call as
// List: /cluster/resources cannot filter by name or tag.
func (d *Driver) Find(ctx context.Context, instanceID string) ([]cloud.Server, error) {
	all, err := d.List(ctx)
	if err != nil {
		return nil, err
	}
	out := []cloud.Server{}
	for _, s := range all {
		if s.InstanceID == instanceID {
			out = append(out, s)
		}
	}
	return out, nil
}

// incomplete: a clone not yet configured, still locked by its clone or
// without our tag.
func incomplete(r resource, tag string) bool {
	return r.Lock == "clone" || r.Lock == "create" || !hasTag(r.Tags, tag)
}

// status maps a VM's pve status (see the package doc).
func status(r resource, tag string) cloud.Status {
	switch {
	case r.Lock == "clone" || r.Lock == "create":
		return cloud.StatusStarting
	case !hasTag(r.Tags, tag):
		return cloud.StatusUnknown
	case r.Status == "running":
		return cloud.StatusRunning
	case r.Status == "stopped":
		return cloud.StatusStopped
	}
	return cloud.StatusUnknown
}

// Create clones the template for req, configures the clone and starts it
// when req.PowerOn. See the package doc for what it sets.
func (d *Driver) Create(ctx context.Context, req cloud.CreateRequest) (cloud.Server, error) {
	name, ok := VMName(req.InstanceID)
	owner, tag := "instance "+req.InstanceID, Tag
	if req.BootstrapID != "" {
		name, ok = BootstrapVMName(req.BootstrapID)
		owner, tag = "bootstrap "+req.BootstrapID, BootstrapTag
	}
	switch {
	case req.InstanceID != "" && req.BootstrapID != "":
		return cloud.Server{}, invalid("a VM is an instance's or a bootstrap's, not both")
	case !ok:
		return cloud.Server{}, invalid("%s cannot be carried in a VM name", owner)
	case req.UserData != "":
		return cloud.Server{}, invalid("user data is not supported on Proxmox VE: its API cannot upload the cloud-init snippet it needs; give a NoCloud seed URL")
	}
	if req.Vcpus == 0 && req.MemoryMB == 0 && req.ServerType != "" {
		size, err := parseServerType(req.ServerType)
		if err != nil {
			return cloud.Server{}, err
		}
		req.Vcpus, req.MemoryMB = size.vcpus, size.memoryMB
	}
	if req.Vcpus < 1 || req.MemoryMB < 16 {
		return cloud.Server{}, invalid("a VM needs at least 1 vCPU and 16 MiB of memory (got %d, %d)", req.Vcpus, req.MemoryMB)
	}
	template := d.cfg.Template
	if req.Image != "" {
		n, err := strconv.Atoi(req.Image)
		if err != nil {
			return cloud.Server{}, invalid("image %q is not the VMID of a Proxmox template", req.Image)
		}
		template = n
	}
	if template < 100 {
		return cloud.Server{}, invalid("no template to clone: the image and the account's template are unset")
	}

	desc := "better-compute " + owner
	if req.Name != "" {
		desc += " (" + req.Name + ")"
	}
	vmid, clone, err := d.clone(ctx, template, name, desc)
	if err != nil {
		return cloud.Server{}, createError(err)
	}
	// A clone that fails is removed by Proxmox; one still running past
	// TaskTimeout is listed (starting) and finished by nobody but pve.
	if err := d.run(ctx, clone, "clone of template "+strconv.Itoa(template)); err != nil {
		return cloud.Server{}, createError(err)
	}
	if err := d.configure(ctx, vmid, req, tag); err != nil {
		d.cleanup(ctx, vmid)
		return cloud.Server{}, createError(err)
	}
	srv := cloud.Server{ID: strconv.Itoa(vmid), InstanceID: req.InstanceID, BootstrapID: req.BootstrapID, Status: cloud.StatusStopped}
	if req.PowerOn {
		if err := d.start(ctx, vmid); err != nil {
			return cloud.Server{}, err
		}
		srv.Status = cloud.StatusStarting
	}
	return srv, nil
}

// cloneTries is how many VMIDs chosen from the listing a clone tries
// before the VMID is left to the next Create (Retryable).
const cloneTries = 3

// clone chooses a free VMID and clones the template onto it: from the
// last listing (listing.go) when it is recent, else from /cluster/nextid.
// Either only proposes an ID, so two creates at once would collide: this
// driver chooses and claims one at a time, and an ID another client took
// since ("already exists", Retryable) is given up for the next one.
func (d *Driver) clone(ctx context.Context, template int, name, desc string) (vmid int, task *pve.Task, err error) {
	d.cloneMu.Lock()
	defer d.cloneMu.Unlock()
	for try := 1; ; try++ {
		vmid, fromListing := d.listed.freeID(d.cfg.ListingMaxAge)
		if !fromListing {
			cluster := (&pve.Cluster{}).New(d.client)
			if err := d.call(ctx, func(ctx context.Context) (err error) {
				vmid, err = cluster.NextID(ctx)
				return err
			}); err != nil {
				return 0, nil, err
			}
			d.listed.taken(vmid)
		}
		err = d.call(ctx, func(ctx context.Context) (err error) {
			_, task, err = d.vm(template).Clone(ctx, &pve.VirtualMachineCloneOptions{
				NewID: vmid, Name: name, Description: desc, Full: true, Storage: d.cfg.Storage,
			})
			return err
		})
		if !fromListing || try == cloneTries || !says(err, "already exists") {
			return vmid, task, err
		}
	}
}

// createError makes a missing template, storage or node Invalid: in
// Create, "does not exist" is a configuration that stays wrong.
func createError(err error) error {
	var pe *cloud.Error
	if errors.As(err, &pe) && pe.Kind == cloud.NotFound {
		return &cloud.Error{Kind: cloud.Invalid, Message: pe.Message, Err: pe.Err}
	}
	return err
}

// configure resizes the clone's disk and sets its configuration, the tag
// last of all (one config update holds everything).
func (d *Driver) configure(ctx context.Context, vmid int, req cloud.CreateRequest, tag string) error {
	if req.DiskGB > 0 {
		var t *pve.Task
		err := d.call(ctx, func(ctx context.Context) (err error) {
			t, err = d.vm(vmid).ResizeDisk(ctx, d.cfg.Disk, fmt.Sprintf("%dG", req.DiskGB))
			return err
		})
		if err == nil {
			err = d.run(ctx, t, "resize of "+d.cfg.Disk)
		}
		if err != nil && !says(err, "shrinking disks is not supported") {
			return err
		}
	}
	opts := []pve.VirtualMachineOption{
		{Name: "cores", Value: req.Vcpus},
		{Name: "memory", Value: req.MemoryMB},
		{Name: "ipconfig0", Value: d.cfg.IPConfig},
		{Name: "tags", Value: tag},
	}
	if req.SeedURL != "" {
		opts = append(opts, pve.VirtualMachineOption{Name: "smbios1", Value: SeedSMBIOS(req.SeedURL)})
	}
	if d.cfg.CIUser != "" {
		opts = append(opts, pve.VirtualMachineOption{Name: "ciuser", Value: d.cfg.CIUser})
	}
	if d.cfg.Bridge != "" {
		opts = append(opts, pve.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=" + d.cfg.Bridge})
	}
	var keys []string
	for _, k := range req.SSHKeys {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		// One key a line, every reserved character percent-encoded (pve
		// refuses '+' for a space).
		opts = append(opts, pve.VirtualMachineOption{Name: "sshkeys", Value: pve.EncodeSSHKeys(keys...)})
	}
	return d.call(ctx, func(ctx context.Context) error { return d.vm(vmid).ConfigSync(ctx, opts...) })
}

// cleanup deletes a clone whose configuration failed, best effort and even
// when ctx is done; a clone it cannot delete is listed as half made.
func (d *Driver) cleanup(ctx context.Context, vmid int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	_ = d.destroy(ctx, vmid, true)
}

// Start powers a VM on and returns it starting, without waiting for the
// start task: the next List shows it running. A start it asked less than
// ShutdownTimeout ago is under way: it makes no call.
func (d *Driver) Start(ctx context.Context, ref cloud.Ref) (cloud.Status, error) {
	if ago, ok := d.asked.Since(ref.ID, cloud.StatusStarting); ok && ago < d.cfg.ShutdownTimeout {
		return cloud.StatusStarting, nil
	}
	vmid, _, err := d.vmOf(ctx, ref)
	if err != nil {
		return "", err
	}
	if err := d.start(ctx, vmid); err != nil {
		return "", err
	}
	return cloud.StatusStarting, nil
}

// start asks pve to start a VM and remembers it asked.
func (d *Driver) start(ctx context.Context, vmid int) error {
	err := d.call(ctx, func(ctx context.Context) error {
		_, err := d.vm(vmid).Start(ctx)
		return err
	})
	if err == nil {
		d.asked.Ask(strconv.Itoa(vmid), cloud.StatusStarting)
	}
	return err
}

// Reboot asks pve to reboot a running VM by ACPI, without waiting for the
// task; a VM that is not running is Invalid.
func (d *Driver) Reboot(ctx context.Context, ref cloud.Ref) error {
	vmid, status, err := d.vmOf(ctx, ref)
	if err != nil {
		return err
	}
	if status != "running" {
		return invalid("VM %d is %s, not running", vmid, status)
	}
	return d.call(ctx, func(ctx context.Context) error {
		_, err := d.vm(vmid).Reboot(ctx)
		return err
	})
}

// Stop asks pve to shut a VM down by ACPI and to power it off when the
// guest has not stopped within ShutdownTimeout (forceStop), and returns
// it stopping without waiting for the task: the next List shows it
// stopped. A stop it asked less than twice that timeout ago (in whole
// seconds, as pve takes it) is under way: it makes no call.
func (d *Driver) Stop(ctx context.Context, ref cloud.Ref) (cloud.Status, error) {
	secs := int((d.cfg.ShutdownTimeout + time.Second - 1) / time.Second)
	if ago, ok := d.asked.Since(ref.ID, cloud.StatusStopping); ok && ago < 2*time.Duration(secs)*time.Second {
		return cloud.StatusStopping, nil
	}
	vmid, _, err := d.vmOf(ctx, ref)
	if err != nil {
		return "", err
	}
	err = d.call(ctx, func(ctx context.Context) error {
		return d.client.Post(ctx, d.vmPath(vmid)+"/status/shutdown", map[string]any{"timeout": secs, "forceStop": 1}, nil)
	})
	switch {
	case says(err, "not running"):
		return cloud.StatusStopped, nil
	case err != nil:
		return "", err
	}
	d.asked.Ask(ref.ID, cloud.StatusStopping)
	return cloud.StatusStopping, nil
}

// Delete powers a VM off if it runs and destroys it with its disks; a VM
// that is gone is deleted. The status the identity check reads says
// whether it runs: a running VM's DELETE is not tried first to be refused.
func (d *Driver) Delete(ctx context.Context, ref cloud.Ref) error {
	vmid, status, err := d.vmOf(ctx, ref)
	if is(err, cloud.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// An instance's VM is not waited for: pve removes it in the task, and
	// one whose delete task fails stays listed as an orphan, which the
	// sweep deletes. A bootstrap's must be gone when Delete returns.
	wait := ref.BootstrapID != ""
	if status == "stopped" {
		err = d.destroy(ctx, vmid, wait)
	}
	if status != "stopped" || says(err, "is running") { // or started since the check
		err = d.powerOffAndDestroy(ctx, vmid, wait)
	}
	if is(err, cloud.NotFound) {
		err = nil
	}
	if err == nil {
		d.asked.Forget(ref.ID)
		d.listed.forget(vmid, !wait)
	}
	return err
}

// powerOffAndDestroy stops a VM hard and destroys it. The DELETE, one
// PollInterval after the stop, is the stop's first poll: pve refuses it
// while the VM runs ("is running"), and only then is the stop task
// polled to its end. Once QEMU has exited, pve takes the DELETE, and its
// task waits for the stop task's file lock.
func (d *Driver) powerOffAndDestroy(ctx context.Context, vmid int, wait bool) error {
	var t *pve.Task
	if err := d.call(ctx, func(ctx context.Context) error {
		var upid pve.UPID
		err := d.client.Post(ctx, d.vmPath(vmid)+"/status/stop", map[string]any{"overrule-shutdown": 1}, &upid)
		t = pve.NewTask(upid, d.client)
		return err
	}); err != nil {
		return err
	}
	timer := time.NewTimer(d.cfg.PollInterval)
	select {
	case <-ctx.Done():
		timer.Stop()
		return classify(ctx.Err())
	case <-timer.C:
	}
	err := d.destroy(ctx, vmid, wait)
	if says(err, "is running") {
		if err = d.run(ctx, t, "stop"); err == nil {
			err = d.destroy(ctx, vmid, wait)
		}
	}
	return err
}

// destroy deletes a stopped VM and, with wait, waits for the task.
func (d *Driver) destroy(ctx context.Context, vmid int, wait bool) error {
	var t *pve.Task
	if err := d.call(ctx, func(ctx context.Context) (err error) {
		t, err = d.vm(vmid).Delete(ctx, &pve.VirtualMachineDeleteOptions{Purge: true, DestroyUnreferencedDisks: true})
		return err
	}); err != nil || !wait {
		return err
	}
	return d.run(ctx, t, "delete")
}
