package proxmoxtest_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	pve "github.com/luthermonson/go-proxmox"

	"github.com/better-compute/vps/drivers/cloud/proxmox/proxmoxtest"
)

// setup serves an emulator and returns it with a go-proxmox client on it.
func setup(t *testing.T, cfg proxmoxtest.Config) (*proxmoxtest.Emulator, *pve.Client) {
	e, c, _ := serve(t, cfg)
	return e, c
}

// serve is setup returning the API's URL too.
func serve(t *testing.T, cfg proxmoxtest.Config) (*proxmoxtest.Emulator, *pve.Client, string) {
	t.Helper()
	if cfg.TaskDuration == 0 {
		cfg.TaskDuration = 20 * time.Millisecond
	}
	e := proxmoxtest.New(cfg)
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	c := pve.NewClient(srv.URL+"/api2/json", pve.WithHTTPClient(srv.Client()),
		pve.WithAPIToken(proxmoxtest.DefaultTokenID, proxmoxtest.DefaultSecret))
	return e, c, srv.URL + "/api2/json"
}

func handle(c *pve.Client, vmid int) *pve.VirtualMachine {
	v := &pve.VirtualMachine{}
	v.New(c, proxmoxtest.DefaultNode, vmid)
	return v
}

// wait waits for a task and returns its exit status.
func wait(t *testing.T, task *pve.Task) string {
	t.Helper()
	if err := task.Wait(context.Background(), 5*time.Millisecond, 5*time.Second); err != nil {
		t.Fatalf("wait %s: %v", task.UPID, err)
	}
	return task.ExitStatus
}

// cloneOne clones the default template to the next VMID and waits.
func cloneOne(t *testing.T, c *pve.Client, name string) int {
	t.Helper()
	ctx := context.Background()
	id, task, err := handle(c, proxmoxtest.DefaultTemplate).Clone(ctx, &pve.VirtualMachineCloneOptions{Name: name, Full: true, Storage: proxmoxtest.DefaultStorage})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	if exit := wait(t, task); exit != "OK" {
		t.Fatalf("clone task: %s", exit)
	}
	return id
}

func TestLifecycle(t *testing.T) {
	e, c := setup(t, proxmoxtest.Config{TaskDuration: 100 * time.Millisecond})
	ctx := context.Background()

	cl, _ := c.Cluster(ctx)
	id, err := cl.NextID(ctx)
	if err != nil || id != 100 {
		t.Fatalf("nextid = %d, %v", id, err)
	}
	_, task, err := handle(c, proxmoxtest.DefaultTemplate).Clone(ctx, &pve.VirtualMachineCloneOptions{NewID: id, Name: "web-1", Full: true, Storage: proxmoxtest.DefaultStorage})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := e.VM(id); v.Lock != "clone" || v.Status != "stopped" {
		t.Fatalf("during the clone: %+v", v)
	}
	if exit := wait(t, task); exit != "OK" {
		t.Fatalf("clone: %s", exit)
	}
	vm, err := (&pve.Node{}).New(c, proxmoxtest.DefaultNode).VirtualMachine(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if vm.Name != "web-1" || vm.Lock != "" || vm.Status != "stopped" || bool(vm.Template) {
		t.Fatalf("clone: %+v", vm)
	}
	if got := vm.VirtualMachineConfig.SCSIs["scsi0"]; got != "local-lvm:vm-100-disk-0,size=2G" {
		t.Errorf("scsi0 = %q", got)
	}
	if cores := vm.VirtualMachineConfig.Cores; cores == nil || *cores != 1 {
		t.Errorf("cores = %v", cores)
	}

	for _, step := range []struct {
		action func(context.Context) (*pve.Task, error)
		want   string
	}{
		{handle(c, id).Start, "running"},
		{handle(c, id).Shutdown, "stopped"},
		{handle(c, id).Start, "running"},
		{handle(c, id).Stop, "stopped"},
	} {
		task, err := step.action(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if exit := wait(t, task); exit != "OK" {
			t.Fatalf("%s: %s", task.Type, exit)
		}
		if v, _ := e.VM(id); v.Status != step.want {
			t.Fatalf("after %s: %s", task.Type, v.Status)
		}
	}
	task, err = handle(c, id).Delete(ctx, &pve.VirtualMachineDeleteOptions{Purge: true})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, task)
	if _, ok := e.VM(id); ok {
		t.Fatal("VM still there after delete")
	}
}

// TestErrors checks that pve's error messages reach go-proxmox's errors.
func TestErrors(t *testing.T) {
	_, c, url := serve(t, proxmoxtest.Config{})
	ctx := context.Background()
	id := cloneOne(t, c, "web-1")
	task, err := handle(c, id).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, task)

	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"clone onto a used VMID", func() error {
			_, _, err := handle(c, proxmoxtest.DefaultTemplate).Clone(ctx, &pve.VirtualMachineCloneOptions{NewID: id, Name: "x"})
			return err
		}, "500 VM 100 already exists on node 'pve'"},
		{"missing VM", func() error { _, err := handle(c, 4242).Start(ctx); return err },
			"500 Configuration file 'nodes/pve/qemu-server/4242.conf' does not exist"},
		{"delete a running VM", func() error { _, err := handle(c, id).Delete(ctx, nil); return err },
			"500 VM 100 is running - destroy failed"},
		{"sshkeys with + for space", func() error {
			return handle(c, id).ConfigSync(ctx, pve.VirtualMachineOption{Name: "sshkeys", Value: "ssh-ed25519+AAAA"})
		}, "bad request: 400 Parameter verification failed. - {\"sshkeys\":\"invalid format - invalid urlencoded string: ssh-ed25519+AAAA\"}"},
		{"unknown storage", func() error {
			_, _, err := handle(c, proxmoxtest.DefaultTemplate).Clone(ctx, &pve.VirtualMachineCloneOptions{NewID: 200, Storage: "nfs"})
			return err
		}, "500 storage 'nfs' does not exist"},
		{"unknown method", func() error { return c.Get(ctx, "/nodes/pve/qemu/100/feature", nil) },
			"501 Method 'GET /nodes/pve/qemu/100/feature' not implemented"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
		})
	}

	t.Run("wrong secret", func(t *testing.T) {
		bad := pve.NewClient(url, pve.WithAPIToken(proxmoxtest.DefaultTokenID, "wrong"))
		if _, err := bad.Version(ctx); !pve.IsNotAuthorized(err) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSSHKeysStoredEncoded(t *testing.T) {
	e, c := setup(t, proxmoxtest.Config{})
	id := cloneOne(t, c, "web-1")
	keys := []string{"ssh-ed25519 AAAAC3Nz+/= alice@laptop", "ssh-rsa AAAAB3 bob"}
	if err := handle(c, id).ConfigSync(context.Background(),
		pve.VirtualMachineOption{Name: "sshkeys", Value: pve.EncodeSSHKeys(keys...)},
		pve.VirtualMachineOption{Name: "tags", Value: "a,b c"}); err != nil {
		t.Fatal(err)
	}
	v, _ := e.VM(id)
	if v.Config["sshkeys"] != pve.EncodeSSHKeys(keys...) {
		t.Errorf("sshkeys = %q", v.Config["sshkeys"])
	}
	if strings.Join(v.Tags, ";") != "a;b;c" || v.Config["tags"] != "a;b;c" {
		t.Errorf("tags = %v, %q", v.Tags, v.Config["tags"])
	}
}

func TestIgnoreShutdown(t *testing.T) {
	e, c := setup(t, proxmoxtest.Config{IgnoreShutdown: true})
	ctx := context.Background()
	id := cloneOne(t, c, "web-1")
	task, _ := handle(c, id).Start(ctx)
	wait(t, task)

	// A shutdown the guest ignores fails at its timeout.
	var upid pve.UPID
	if err := c.Post(ctx, "/nodes/pve/qemu/100/status/shutdown", map[string]any{"timeout": 1}, &upid); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if exit := wait(t, pve.NewTask(upid, c)); exit != "VM quit/powerdown failed - got timeout" {
		t.Fatalf("exit = %q", exit)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("shutdown failed after %s, before its timeout", d)
	}
	if v, _ := e.VM(id); v.Status != "running" {
		t.Fatalf("status = %s", v.Status)
	}

	// A stop during a shutdown waits for pve's lock unless it overrules it.
	if err := c.Post(ctx, "/nodes/pve/qemu/100/status/shutdown", map[string]any{"timeout": 30}, &upid); err != nil {
		t.Fatal(err)
	}
	shutdown := pve.NewTask(upid, c)
	task, _ = handle(c, id).Stop(ctx)
	if exit := wait(t, task); !strings.Contains(exit, "can't lock file") {
		t.Fatalf("stop without overrule: %q", exit)
	}
	if err := c.Post(ctx, "/nodes/pve/qemu/100/status/stop", map[string]any{"overrule-shutdown": 1}, &upid); err != nil {
		t.Fatal(err)
	}
	if exit := wait(t, pve.NewTask(upid, c)); exit != "OK" {
		t.Fatalf("stop: %q", exit)
	}
	if exit := wait(t, shutdown); exit != "interrupted by signal" {
		t.Fatalf("overruled shutdown: %q", exit)
	}
	if v, _ := e.VM(id); v.Status != "stopped" {
		t.Fatalf("status = %s", v.Status)
	}
}

func TestMaxVMs(t *testing.T) {
	e, c := setup(t, proxmoxtest.Config{MaxVMs: 1})
	cloneOne(t, c, "web-1")
	_, task, err := handle(c, proxmoxtest.DefaultTemplate).Clone(context.Background(), &pve.VirtualMachineCloneOptions{Name: "web-2", Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if exit := wait(t, task); exit != "clone failed: quota exceeded - maximum of 1 VMs reached" {
		t.Fatalf("exit = %q", exit)
	}
	if n := len(e.VMs()); n != 2 {
		t.Fatalf("%d VMs, want the template and one clone", n)
	}
	e.SetMaxVMs(2)
	cloneOne(t, c, "web-2")
}

func TestResources(t *testing.T) {
	e, c := setup(t, proxmoxtest.Config{})
	id := cloneOne(t, c, "web-1")
	other := e.AddVM("db-1", []string{"prod", "db"})
	cl, _ := c.Cluster(context.Background())
	e.Faults().Reset()
	rs, err := cl.Resources(context.Background(), "vm")
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]*pve.ClusterResource{}
	for _, r := range rs {
		got[r.VMID] = r
	}
	if r := got[proxmoxtest.DefaultTemplate]; r == nil || r.Template != 1 || r.Type != "qemu" {
		t.Errorf("template: %+v", r)
	}
	if r := got[uint64(id)]; r == nil || r.Name != "web-1" || r.Status != "stopped" || r.Template != 0 || r.Node != "pve" {
		t.Errorf("clone: %+v", r)
	}
	if r := got[uint64(other)]; r == nil || r.Tags != "prod;db" {
		t.Errorf("added: %+v", r)
	}
	if !e.DeleteVM(other) || e.DeleteVM(other) {
		t.Error("DeleteVM")
	}
	if calls := e.Faults().Calls()["GET /api2/json/cluster/resources"]; calls != 1 {
		t.Errorf("calls = %d", calls)
	}
}

// TestReboot: a running VM reboots through a task and runs throughout; a
// stopped one is refused.
func TestReboot(t *testing.T) {
	e, c := setup(t, proxmoxtest.Config{})
	ctx := context.Background()
	id := cloneOne(t, c, "web-1")
	if _, err := handle(c, id).Reboot(ctx); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("rebooting a stopped VM: %v", err)
	}
	task, _ := handle(c, id).Start(ctx)
	wait(t, task)
	task, err := handle(c, id).Reboot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if exit := wait(t, task); exit != "OK" {
		t.Fatalf("reboot: %q", exit)
	}
	if v, _ := e.VM(id); v.Status != "running" {
		t.Fatalf("status after the reboot = %s", v.Status)
	}
}
