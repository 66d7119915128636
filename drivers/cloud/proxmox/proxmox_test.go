package proxmox_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/cloudtest"
	"github.com/better-compute/vps/drivers/cloud/proxmox"
	"github.com/better-compute/vps/drivers/cloud/proxmox/proxmoxtest"
	"github.com/better-compute/vps/internal/testenv"
)

// setup serves an emulator and returns a driver on it; tweak adjusts both
// configurations first.
func setup(t testing.TB, tweak ...func(*proxmoxtest.Config, *proxmox.Config)) (*proxmox.Driver, *proxmoxtest.Emulator) {
	t.Helper()
	ec := proxmoxtest.Config{TaskDuration: 20 * time.Millisecond}
	dc := proxmox.Config{
		Token:           proxmoxtest.DefaultTokenID + "=" + proxmoxtest.DefaultSecret,
		Template:        proxmoxtest.DefaultTemplate,
		Timeout:         2 * time.Second,
		PollInterval:    5 * time.Millisecond,
		ShutdownTimeout: 300 * time.Millisecond,
		TaskTimeout:     5 * time.Second,
	}
	for _, f := range tweak {
		f(&ec, &dc)
	}
	e := proxmoxtest.New(ec)
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	dc.Endpoint = srv.URL + "/api2/json"
	d, err := proxmox.New(dc)
	if err != nil {
		t.Fatal(err)
	}
	return d, e
}

var keys = []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI+k/z= alice@laptop", "ssh-rsa AAAAB3NzaC1yc2E bob's key"}

func request(powerOn bool) cloud.CreateRequest {
	return cloud.CreateRequest{InstanceID: uuid.NewString(), Name: "web-1", Vcpus: 2, MemoryMB: 2048,
		DiskGB: 10, SSHKeys: keys, PowerOn: powerOn}
}

// listed returns our server with id, if List shows it.
func listed(t *testing.T, d *proxmox.Driver, id string) (cloud.Server, bool) {
	t.Helper()
	servers, err := d.List(context.Background())
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	for _, s := range servers {
		if s.ID == id {
			return s, true
		}
	}
	return cloud.Server{}, false
}

func vm(t *testing.T, e *proxmoxtest.Emulator, serverID string) proxmoxtest.VMView {
	t.Helper()
	id, _ := strconv.Atoi(serverID)
	v, ok := e.VM(id)
	if !ok {
		t.Fatalf("no VM %s", serverID)
	}
	return v
}

func wantKind(t *testing.T, err error, want cloud.Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", want)
	}
	if got := cloud.KindOf(err); got != want {
		t.Fatalf("kind = %s, want %s: %v", got, want, err)
	}
}

// create makes a server and waits until List shows it stopped or running.
func create(t *testing.T, d *proxmox.Driver, req cloud.CreateRequest) cloud.Server {
	t.Helper()
	srv, err := d.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	want := cloud.StatusStopped
	if req.PowerOn {
		want = cloud.StatusRunning
	}
	testenv.Eventually(t, 5*time.Second, "server "+string(want), func() bool { s, _ := listed(t, d, srv.ID); return s.Status == want })
	return srv
}

func TestCreate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		powerOn  bool
		returned cloud.Status
		then     cloud.Status
	}{
		{"stopped", false, cloud.StatusStopped, cloud.StatusStopped},
		{"powered on", true, cloud.StatusStarting, cloud.StatusRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, e := setup(t)
			req := request(tc.powerOn)
			srv, err := d.Create(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if srv.InstanceID != req.InstanceID || srv.Status != tc.returned || srv.ID == "" {
				t.Fatalf("created %+v", srv)
			}
			testenv.Eventually(t, 5*time.Second, string(tc.then), func() bool {
				s, ok := listed(t, d, srv.ID)
				return ok && s.Status == tc.then && s.InstanceID == req.InstanceID && len(s.Addresses) == 0
			})

			v := vm(t, e, srv.ID)
			sshkeys, err := url.PathUnescape(v.Config["sshkeys"])
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"name":      "bc-" + req.InstanceID,
				"cores":     "2",
				"memory":    "2048",
				"ipconfig0": "ip=dhcp",
				"tags":      cloud.Label,
				"scsi0":     "local-lvm:vm-" + srv.ID + "-disk-0,size=10G",
			}
			for k, w := range want {
				if v.Config[k] != w {
					t.Errorf("%s = %q, want %q", k, v.Config[k], w)
				}
			}
			if sshkeys != strings.Join(keys, "\n") {
				t.Errorf("sshkeys decode to %q", sshkeys)
			}
			if _, set := v.Config["ciuser"]; set {
				t.Errorf("ciuser set by default: %q", v.Config["ciuser"])
			}
			if !strings.Contains(v.Config["description"], req.InstanceID+" (web-1)") {
				t.Errorf("description = %q", v.Config["description"])
			}
		})
	}
}

func TestCreateOptions(t *testing.T) {
	d, e := setup(t, func(_ *proxmoxtest.Config, c *proxmox.Config) {
		c.CIUser, c.Bridge, c.IPConfig = "bc", "vmbr1", "ip=192.0.2.10/24,gw=192.0.2.1"
	})
	req := request(false)
	req.DiskGB = 1 // smaller than the template's 2G: the clone keeps 2G
	req.Image = strconv.Itoa(proxmoxtest.DefaultTemplate)
	srv := create(t, d, req)
	v := vm(t, e, srv.ID)
	if v.Config["ciuser"] != "bc" || v.Config["ipconfig0"] != "ip=192.0.2.10/24,gw=192.0.2.1" ||
		!strings.HasSuffix(v.Config["net0"], ",bridge=vmbr1") || !strings.HasSuffix(v.Config["scsi0"], "size=2G") {
		t.Fatalf("config %v", v.Config)
	}
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ignoreShutdown bool
		stops          int
	}{
		// pve's forceStop powers off a guest that ignores ACPI: no second call.
		{"guest obeys ACPI", false, 0},
		{"guest ignores ACPI", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, e := setup(t, func(c *proxmoxtest.Config, _ *proxmox.Config) { c.IgnoreShutdown = tc.ignoreShutdown })
			srv := create(t, d, request(true))
			testenv.Eventually(t, 5*time.Second, "running", func() bool { return vm(t, e, srv.ID).Status == "running" })
			e.Faults().Reset()
			ctx := context.Background()
			if got, err := d.Stop(ctx, srv.Ref()); err != nil || got != cloud.StatusStopping {
				t.Fatalf("Stop = %q, %v; want stopping", got, err)
			}
			// Stop again, as the reconciler does when a sweep lists the VM
			// still running: the shutdown is under way, no call.
			testenv.Eventually(t, 5*time.Second, "stopped", func() bool {
				if _, err := d.Stop(ctx, srv.Ref()); err != nil {
					t.Fatalf("Stop again: %v", err)
				}
				return vm(t, e, srv.ID).Status == "stopped"
			})
			calls := e.Faults().Calls()
			if calls["POST /api2/json/nodes/pve/qemu/{id}/status/shutdown"] != 1 ||
				calls["POST /api2/json/nodes/pve/qemu/{id}/status/stop"] != tc.stops {
				t.Fatalf("calls %v", calls)
			}
			// Stopping a stopped server succeeds.
			off := create(t, d, request(false))
			if got, err := d.Stop(ctx, off.Ref()); err != nil || got != cloud.StatusStopped {
				t.Fatalf("stop of a stopped VM = %q, %v; want stopped", got, err)
			}
		})
	}
}

func TestStart(t *testing.T) {
	d, e := setup(t)
	srv := create(t, d, request(false))
	for i := range 2 { // a start repeated while under way makes no call
		e.Faults().Reset()
		if got, err := d.Start(context.Background(), srv.Ref()); err != nil || got != cloud.StatusStarting {
			t.Fatalf("start %d = %q, %v; want starting", i, got, err)
		}
		if total, _ := e.Faults().Total(); (i == 0) != (total > 0) {
			t.Fatalf("start %d made %d calls", i, total)
		}
	}
	testenv.Eventually(t, 5*time.Second, "listed running", func() bool {
		s, _ := listed(t, d, srv.ID)
		return s.Status == cloud.StatusRunning
	})
}

func TestDelete(t *testing.T) {
	d, e := setup(t)
	srv := create(t, d, request(true))
	if err := d.Delete(context.Background(), srv.Ref()); err != nil {
		t.Fatal(err)
	}
	// Delete does not wait for an instance's VM's delete task.
	id, _ := strconv.Atoi(srv.ID)
	testenv.Eventually(t, 5*time.Second, "VM gone", func() bool { _, ok := e.VM(id); return !ok })
	if _, ok := listed(t, d, srv.ID); ok {
		t.Fatal("still listed")
	}
	if err := d.Delete(context.Background(), srv.Ref()); err != nil {
		t.Fatalf("delete again: %v", err)
	}
}

// TestCallsByReusedID: Proxmox gives a deleted VM's ID to the next clone, so
// a call on an instance's server retried after its VM was deleted (a
// reconciler killed before it recorded the delete) reaches a VM of the same
// ID that is another instance's: it must leave that VM alone.
func TestCallsByReusedID(t *testing.T) {
	d, e := setup(t)
	ctx := context.Background()
	gone := create(t, d, request(false))
	if err := d.Delete(ctx, gone.Ref()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "deleted VM unlisted", func() bool { _, ok := listed(t, d, gone.ID); return !ok })
	other := create(t, d, request(false))
	if other.ID != gone.ID {
		t.Fatalf("the new VM is %s, want the deleted one's ID %s", other.ID, gone.ID)
	}
	_, err := d.Start(ctx, gone.Ref())
	wantKind(t, err, cloud.NotFound)
	if err := d.Delete(ctx, gone.Ref()); err != nil {
		t.Fatalf("delete again: %v", err)
	}
	id, _ := strconv.Atoi(other.ID)
	if v, ok := e.VM(id); !ok || v.Status != "stopped" {
		t.Fatalf("the other instance's VM %s: %+v, present %v; want it stopped and kept", other.ID, v, ok)
	}
}

func TestMissingServer(t *testing.T) {
	d, _ := setup(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(context.Context, cloud.Ref) (cloud.Status, error)
		want cloud.Kind
	}{
		{"start", d.Start, cloud.NotFound},
		{"stop", d.Stop, cloud.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.call(ctx, cloud.Ref{ID: "4242", InstanceID: "01a23169-0dbb-734d-9634-5581e1f7f37d"})
			wantKind(t, err, tc.want)
			if !strings.Contains(err.Error(), "4242.conf' does not exist") {
				t.Errorf("message: %v", err)
			}
		})
	}
	t.Run("malformed ID", func(t *testing.T) {
		_, err := d.Start(ctx, cloud.Ref{ID: "web-1"})
		wantKind(t, err, cloud.Invalid)
	})
}

func TestQuota(t *testing.T) {
	d, e := setup(t, func(c *proxmoxtest.Config, _ *proxmox.Config) { c.MaxVMs = 1 })
	create(t, d, request(false))
	_, err := d.Create(context.Background(), request(false))
	wantKind(t, err, cloud.Quota)
	var pe *cloud.Error
	if !errors.As(err, &pe) || pe.Message != "clone failed: quota exceeded - maximum of 1 VMs reached" {
		t.Fatalf("message: %v", err)
	}
	if n := len(e.VMs()); n != 2 {
		t.Fatalf("%d VMs, want the template and one", n)
	}
}

func TestCreateRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*cloud.CreateRequest)
		calls  bool
	}{
		{"instance ID not DNS-safe", func(r *cloud.CreateRequest) { r.InstanceID = "Ins 1" }, false},
		{"user data", func(r *cloud.CreateRequest) { r.UserData = "#!/bin/sh\n" }, false},
		{"no vCPU", func(r *cloud.CreateRequest) { r.Vcpus = 0 }, false},
		{"image not a VMID", func(r *cloud.CreateRequest) { r.Image = "debian-12" }, false},
		{"template missing", func(r *cloud.CreateRequest) { r.Image = "9999" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, e := setup(t)
			req := request(false)
			tc.change(&req)
			_, err := d.Create(context.Background(), req)
			wantKind(t, err, cloud.Invalid)
			if total, _ := e.Faults().Total(); (total > 0) != tc.calls {
				t.Fatalf("%d calls", total)
			}
			if n := len(e.VMs()); n != 1 {
				t.Fatalf("%d VMs", n)
			}
		})
	}
}

// TestCreateCleansUp: a clone whose configuration is refused is deleted.
func TestCreateCleansUp(t *testing.T) {
	d, e := setup(t)
	e.Faults().Inject(cloudtest.Fault{Match: "PUT /api2/json/nodes/pve/qemu/{id}/config", Count: 1, Status: 400,
		Body: `{"data":null,"errors":{"memory":"value must have a maximum value of 4194304"}}`})
	_, err := d.Create(context.Background(), request(false))
	wantKind(t, err, cloud.Invalid)
	if !strings.Contains(err.Error(), "memory: value must have a maximum value of 4194304") {
		t.Errorf("message: %v", err)
	}
	if n := len(e.VMs()); n != 1 {
		t.Fatalf("%d VMs left", n)
	}
}

// TestNextIDRace: two creates given the same VMID by /cluster/nextid; the
// second clone is refused and the create is retryable.
func TestNextIDRace(t *testing.T) {
	d, e := setup(t)
	taken := e.AddVM("other", nil)
	e.Faults().Inject(cloudtest.Fault{Match: "GET /api2/json/cluster/nextid", Count: 1, Status: 200,
		Body: `{"data":"` + strconv.Itoa(taken) + `"}`})
	_, err := d.Create(context.Background(), request(false))
	wantKind(t, err, cloud.Retryable)
	if !strings.Contains(err.Error(), "already exists") {
		t.Errorf("message: %v", err)
	}
	if n := len(e.VMs()); n != 2 {
		t.Fatalf("%d VMs", n)
	}
}

func TestInjectedErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   cloud.Kind
	}{
		{500, `{"data":null}`, cloud.Retryable},
		// go-proxmox itself would decode these as an empty list.
		{503, `{"data":null}`, cloud.Retryable},
		{502, `<html>Bad Gateway</html>`, cloud.Retryable},
		{429, `{"data":null}`, cloud.RateLimited},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			d, e := setup(t)
			e.AddVM("bc-"+uuid.NewString(), []string{cloud.Label})
			e.Faults().Inject(cloudtest.Fault{Match: "cluster/resources", Count: 1, Status: tc.status, Body: tc.body})
			_, err := d.List(context.Background())
			wantKind(t, err, tc.want)
			servers, err := d.List(context.Background())
			if err != nil || len(servers) != 1 {
				t.Fatalf("after the fault: %v, %v", servers, err)
			}
		})
	}
}

func TestStall(t *testing.T) {
	d, e := setup(t, func(_ *proxmoxtest.Config, c *proxmox.Config) { c.Timeout = 100 * time.Millisecond })
	e.Faults().Inject(cloudtest.Fault{Match: "cluster/resources", Count: 1, Delay: 2 * time.Second})
	start := time.Now()
	_, err := d.List(context.Background())
	wantKind(t, err, cloud.Retryable)
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("List took %s", elapsed)
	}
}

func TestWrongSecret(t *testing.T) {
	const secret = "0f0e0d0c-dead-beef-0000-123456789abc"
	d, _ := setup(t, func(_ *proxmoxtest.Config, c *proxmox.Config) { c.Token = proxmoxtest.DefaultTokenID + "=" + secret })
	ctx := context.Background()
	_, listErr := d.List(ctx)
	_, createErr := d.Create(ctx, request(false))
	_, startErr := d.Start(ctx, cloud.Ref{ID: "100"})
	for _, err := range []error{listErr, createErr, startErr} {
		wantKind(t, err, cloud.Refused)
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), proxmoxtest.DefaultSecret) {
			t.Fatalf("secret in %q", err)
		}
	}
	if _, err := proxmox.New(proxmox.Config{Endpoint: "https://pve:8006", Token: "no-bang=" + secret}); err == nil ||
		strings.Contains(err.Error(), secret) {
		t.Fatalf("malformed token: %v", err)
	}
}

// TestListMarkers: List shows the VMs named ours (a half-made one as
// unknown), not foreign ones or templates.
func TestListMarkers(t *testing.T) {
	d, e := setup(t)
	ours, half := uuid.NewString(), uuid.NewString()
	oursID := e.AddVM("bc-"+ours, []string{"prod", cloud.Label})
	halfID := e.AddVM("bc-"+half, nil)
	e.AddVM("web-1", nil)
	e.AddVM("web-2", []string{cloud.Label}) // tagged, but whose?
	e.AddVM("bc-NotOurs", []string{cloud.Label})
	apiID := e.AddVM("bc-ins--0c2ftxr2q1dh5a3hd4yqf2m7bc", []string{cloud.Label})

	servers, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []cloud.Server{
		{ID: strconv.Itoa(oursID), InstanceID: ours, Status: cloud.StatusStopped},
		{ID: strconv.Itoa(halfID), InstanceID: half, Status: cloud.StatusUnknown, Incomplete: true},
		{ID: strconv.Itoa(apiID), InstanceID: "ins_0c2ftxr2q1dh5a3hd4yqf2m7bc", Status: cloud.StatusStopped},
	}
	if !slices.EqualFunc(servers, want, func(a, b cloud.Server) bool {
		return a.ID == b.ID && a.InstanceID == b.InstanceID && a.Status == b.Status && a.Incomplete == b.Incomplete
	}) {
		t.Fatalf("listed %+v, want %+v", servers, want)
	}

	found, err := d.Find(context.Background(), ours)
	if err != nil || len(found) != 1 || found[0].ID != strconv.Itoa(oursID) {
		t.Fatalf("find: %+v, %v", found, err)
	}
	if e.DeleteVM(oursID); len(must(d.Find(context.Background(), ours))) != 0 {
		t.Fatal("found a deleted VM")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestListIsOneCall(t *testing.T) {
	d, e := setup(t)
	for range 3 {
		create(t, d, request(false))
	}
	e.Faults().Reset()
	servers, err := d.List(context.Background())
	if err != nil || len(servers) != 3 {
		t.Fatalf("%v, %v", servers, err)
	}
	if total, _ := e.Faults().Total(); total != 1 {
		t.Fatalf("%d calls: %v", total, e.Faults().Calls())
	}
}

// TestDeleteLocked: a VM still being cloned cannot be deleted yet.
func TestDeleteLocked(t *testing.T) {
	d, e := setup(t, func(c *proxmoxtest.Config, p *proxmox.Config) {
		c.TaskDuration = time.Second
		p.TaskTimeout = 50 * time.Millisecond
	})
	_, err := d.Create(context.Background(), request(false))
	wantKind(t, err, cloud.Retryable) // the clone outlived TaskTimeout
	servers := must(d.List(context.Background()))
	if len(servers) != 1 || servers[0].Status != cloud.StatusStarting {
		t.Fatalf("listed %+v", servers)
	}
	err = d.Delete(context.Background(), servers[0].Ref())
	wantKind(t, err, cloud.Retryable)
	if !strings.Contains(err.Error(), "VM is locked (clone)") {
		t.Fatalf("message: %v", err)
	}
	if len(e.VMs()) != 2 {
		t.Fatal("VM gone")
	}
}

// TestCallCounts records the calls each method makes in the normal case;
// task status polls depend on timing and are counted apart. With a recent
// listing (the sweep's), calls by ID take whose VM it is and its status
// from it, and Create its VMID; without one they ask pve.
func TestCallCounts(t *testing.T) {
	const (
		vmPath = "/api2/json/nodes/pve/qemu/{id}"
		whose  = "GET " + vmPath + "/status/current" // cloud.Ref's check
		nextid = "GET /api2/json/cluster/nextid"
		list   = "GET /api2/json/cluster/resources"
	)
	for _, tc := range []struct {
		name   string
		maxAge time.Duration
	}{
		{"recent listing", 0},
		{"no listing", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, e := setup(t, func(c *proxmoxtest.Config, p *proxmox.Config) {
				p.ListingMaxAge = tc.maxAge
				// Tasks end before the first poll: one poll each, and the
				// DELETE after a stop is not refused.
				p.PollInterval = 2 * c.TaskDuration
			})
			ctx := context.Background()
			// A lifecycle's calls, task polls included (issue 17: at most
			// 10 with a recent listing).
			lifecycle := map[string]bool{"Create (DiskGB, PowerOn)": true, "Stop (ACPI)": true, "Start": true, "Delete (running)": true}
			calls := 0
			count := func(name string, f func() error, want map[string]int) {
				t.Helper()
				e.Faults().Reset()
				if err := f(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, polls := map[string]int{}, 0
				for k, n := range e.Faults().Calls() {
					if strings.Contains(k, "/tasks/") {
						polls += n
					} else {
						got[k] = n
					}
				}
				total, _ := e.Faults().Total()
				if lifecycle[name] {
					calls += total
				}
				t.Logf("%-28s %d calls: %d + %d task polls %v", name, total, total-polls, polls, got)
				if !maps.Equal(got, want) {
					t.Errorf("%s: calls %v, want %v", name, got, want)
				}
			}
			// with adds the call k that a recent listing saves.
			with := func(m map[string]int, k string) map[string]int {
				if tc.maxAge < 0 {
					m[k] = 1
				}
				return m
			}
			var srv cloud.Server
			// The look-up before a create lists the cluster.
			count("Find", func() error { _, err := d.Find(ctx, "none"); return err }, map[string]int{list: 1})
			count("Create (DiskGB, PowerOn)", func() (err error) { srv, err = d.Create(ctx, request(true)); return err }, with(map[string]int{
				"POST " + vmPath + "/clone": 1, "PUT " + vmPath + "/resize": 1,
				"PUT " + vmPath + "/config": 1, "POST " + vmPath + "/status/start": 1}, nextid))
			testenv.Eventually(t, 5*time.Second, "running", func() bool { return vm(t, e, srv.ID).Status == "running" })
			count("List", func() error { _, err := d.List(ctx); return err }, map[string]int{list: 1})
			count("Stop (ACPI)", func() error { _, err := d.Stop(ctx, srv.Ref()); return err }, with(map[string]int{"POST " + vmPath + "/status/shutdown": 1}, whose))
			testenv.Eventually(t, 5*time.Second, "stopped", func() bool { s, _ := listed(t, d, srv.ID); return s.Status == cloud.StatusStopped })
			count("Start", func() error { _, err := d.Start(ctx, srv.Ref()); return err }, with(map[string]int{"POST " + vmPath + "/status/start": 1}, whose))
			testenv.Eventually(t, 5*time.Second, "running", func() bool { s, _ := listed(t, d, srv.ID); return s.Status == cloud.StatusRunning })
			// The status read says it runs: it is stopped first, not
			// refused first, and the DELETE a poll interval later is the
			// stop's poll.
			count("Delete (running)", func() error { return d.Delete(ctx, srv.Ref()) }, with(map[string]int{
				"DELETE " + vmPath: 1, "POST " + vmPath + "/status/stop": 1}, whose))
			// clone, its poll, resize, its poll, config, start; shutdown;
			// start; stop, DELETE; and without a listing nextid and three
			// status/current.
			if want := map[bool]int{true: 10, false: 14}[tc.maxAge >= 0]; calls != want {
				t.Errorf("a lifecycle made %d calls, want %d", calls, want)
			}
			srv = create(t, d, request(false))
			count("Delete (stopped)", func() error { return d.Delete(ctx, srv.Ref()) }, with(map[string]int{"DELETE " + vmPath: 1}, whose))
		})
	}
}

// BenchmarkSweep100 lists a node of 100 of our VMs, as one sweep does, and
// reports the calls a sweep makes.
func BenchmarkSweep100(b *testing.B) {
	d, e := setup(b)
	for i := range 100 {
		name, _ := proxmox.VMName(fmt.Sprintf("instance-%03d", i))
		e.AddVM(name, []string{proxmox.Tag})
	}
	e.Faults().Reset()
	for b.Loop() {
		servers, err := d.List(context.Background())
		if err != nil || len(servers) != 100 {
			b.Fatalf("List: %d servers, %v", len(servers), err)
		}
	}
	total, _ := e.Faults().Total()
	b.ReportMetric(float64(total)/float64(b.N), "calls/sweep")
}

// TestVMIDTakenSinceListing: a VMID the listing showed free and another
// client took since is refused by the clone; the next one is tried.
func TestVMIDTakenSinceListing(t *testing.T) {
	t.Parallel()
	d, e := setup(t)
	ctx := context.Background()
	must(d.Find(ctx, "none"))
	other := e.AddVM("someone-else", nil) // the VMID the listing shows free
	e.Faults().Reset()
	srv := create(t, d, request(false))
	if srv.ID == strconv.Itoa(other) {
		t.Fatalf("cloned onto %s, someone else's", srv.ID)
	}
	calls := e.Faults().Calls()
	if n := calls["POST /api2/json/nodes/pve/qemu/{id}/clone"]; n != 2 {
		t.Errorf("%d clones, want 2 (the refused one, the next ID): %v", n, calls)
	}
	if n := calls["GET /api2/json/cluster/nextid"]; n != 0 {
		t.Errorf("nextid asked %d times: %v", n, calls)
	}
	if v := vm(t, e, strconv.Itoa(other)); v.Name != "someone-else" {
		t.Errorf("someone else's VM is now %q", v.Name)
	}
}

// TestFreshDeleteAfterIDReused: an orphan seen in a listing is gone, and
// its VMID given to another instance's VM, before the sweep deletes it.
// A Delete that asks for Fresh reads the VM and leaves the new one; one
// that trusts the listing deletes it (why the sweep asks).
func TestFreshDeleteAfterIDReused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fresh   bool
		survive bool
	}{{fresh: true, survive: true}, {fresh: false, survive: false}} {
		t.Run(fmt.Sprintf("fresh=%v", tc.fresh), func(t *testing.T) {
			t.Parallel()
			d, e := setup(t)
			ctx := context.Background()
			orphanName, _ := proxmox.VMName("7c1e2f9a-3b4d-4e5f-8a6b-000000000001")
			newName, _ := proxmox.VMName("7c1e2f9a-3b4d-4e5f-8a6b-000000000002")
			orphan := e.AddVM(orphanName, nil)
			if _, err := d.List(ctx); err != nil { // the sweep's listing
				t.Fatal(err)
			}
			e.DeleteVM(orphan)
			if reused := e.AddVM(newName, nil); reused != orphan {
				t.Fatalf("the emulator gave VMID %d, not the orphan's %d", reused, orphan)
			}
			err := d.Delete(ctx, cloud.Ref{ID: strconv.Itoa(orphan), InstanceID: "7c1e2f9a-3b4d-4e5f-8a6b-000000000001", Fresh: tc.fresh})
			if err != nil {
				t.Fatalf("Delete: %v", err)
			}
			deletes := 0
			for call, n := range e.Faults().Calls() {
				if strings.HasPrefix(call, "DELETE ") {
					deletes += n
				}
			}
			if survive := deletes == 0; survive != tc.survive {
				t.Fatalf("the new instance's VM left alone = %v (%d deletes), want %v", survive, deletes, tc.survive)
			}
		})
	}
}
