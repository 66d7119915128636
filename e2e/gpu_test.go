package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// gpuCluster starts a cluster of one fake host with 2 fake GPUs and
// returns it with a function that writes an Xid line of a device into the
// host's kernel log.
func gpuCluster(t *testing.T) (*cluster, func(address string, code int, msg string)) {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 16, hostArgs: []string{"--fake-gpus", "2", "--fake-kmsg", kmsg}})
	return c, func(address string, code int, msg string) {
		t.Helper()
		f, err := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		now := time.Now()
		fmt.Fprintf(f, "4,%d,%d,-;NVRM: Xid (PCI:%s): %d, pid=4242, name=python3, %s\n", now.UnixNano(), now.UnixMicro(), strings.TrimSuffix(address, ".0"), code, msg)
	}
}

// TestGPUXid: through the real processes, a fake host with 2 fake GPUs
// whose kernel log the test writes. An Xid 79 on one GPU marks it
// unhealthy; the instance holding it gets a reason naming the device and
// the Xid, an instance.gpu_failed audit row and a live UPDATED event, and
// keeps the reason through its next steps. A new GPU instance goes to the
// other device; with both unhealthy one waits PENDING saying so. Clearing
// a mark (operators only, coded errors for what does not exist) makes the
// device placeable again: the waiting instance is placed on it.
func TestGPUXid(t *testing.T) {
	t.Parallel()
	c, xid := gpuCluster(t)
	gpuFlavor := c.must(c.operator, `mutation($m: String!) { createFlavor(input: {name: "gpu", vcpus: 1, memoryMb: 1024, diskGb: 10, gpuModel: $m, gpuCount: 1}) { flavor { id } } }`,
		map[string]any{"m": fake.GPUModel}, "createFlavor", "flavor", "id")
	data, _ := c.gql(c.operator, `{ hosts { id } }`, nil)
	hostID := data["hosts"].([]any)[0].(map[string]any)["id"].(string)

	opts, _ := redis.ParseURL(c.redisURL)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	sub := rdb.PSubscribe(context.Background(), "bc:events:*")
	defer sub.Close()
	if _, err := sub.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}

	device := func(instance string) string {
		t.Helper()
		var addr string
		testenv.Eventually(t, 30*time.Second, "a device claimed for "+instance, func() bool {
			c.db.QueryRow(context.Background(), "SELECT address FROM device_claims WHERE instance_id = $1 AND released_at IS NULL", decode(t, ids.Instance, instance)).Scan(&addr)
			return addr != ""
		})
		return addr
	}
	running := func(id string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, id+" RUNNING", func() bool {
			state, _ := c.instanceState(id)
			return state == "RUNNING"
		})
	}
	wantReason := func(address string) string {
		return "GPU " + address + " on host hv-0 is unhealthy (Xid 79: GPU has fallen off the bus.)"
	}

	a := c.createOf(gpuFlavor, "gpu-a", "RUNNING")
	running(a)
	first := device(a)

	t.Run("a fatal Xid marks the device and tells of its instance", func(t *testing.T) {
		xid(first, 79, "GPU has fallen off the bus.")
		testenv.Eventually(t, 30*time.Second, "the instance's reason naming the device and the Xid", func() bool {
			_, reason := c.instanceState(a)
			return strings.HasPrefix(reason, wantReason(first))
		})
		if n := c.count("host_gpus WHERE address = $1 AND unhealthy_since IS NOT NULL AND last_xid = 79 AND health_reason = 'Xid 79: GPU has fallen off the bus.'", first); n != 1 {
			t.Fatalf("device %s not marked unhealthy", first)
		}
		if n := c.count("audit_events WHERE action = 'instance.gpu_failed' AND target_id = $1 AND principal_id IS NULL", decode(t, ids.Instance, a)); n != 1 {
			t.Fatalf("%d instance.gpu_failed audit rows, want 1", n)
		}
		timeout := time.After(20 * time.Second)
		for {
			select {
			case msg := <-sub.Channel():
				var ev events.InstanceEvent
				if json.Unmarshal([]byte(msg.Payload), &ev) == nil && ev.Instance.ID == a && ev.Type == events.Updated && strings.HasPrefix(ev.Instance.StateReason, wantReason(first)) {
					return
				}
			case <-timeout:
				t.Fatal("no live UPDATED event with the reason")
			}
		}
	})

	var b string
	t.Run("a new GPU instance goes to the other device", func(t *testing.T) {
		b = c.createOf(gpuFlavor, "gpu-b", "RUNNING")
		running(b)
		if second := device(b); second == first {
			t.Fatalf("placed on the unhealthy device %s", first)
		}
	})

	t.Run("the reason stays through the instance's steps", func(t *testing.T) {
		c.set("stopInstance", a)
		testenv.Eventually(t, 30*time.Second, "the instance STOPPED", func() bool {
			state, _ := c.instanceState(a)
			return state == "STOPPED"
		})
		if _, reason := c.instanceState(a); !strings.HasPrefix(reason, wantReason(first)) {
			t.Fatalf("reason %q after stopping, want the device's", reason)
		}
		c.set("deleteInstance", a)
		testenv.Eventually(t, 30*time.Second, "the instance DELETED, its device released", func() bool {
			return c.count("device_claims WHERE instance_id = $1 AND released_at IS NULL", decode(t, ids.Instance, a)) == 0
		})
	})

	var pending string
	t.Run("with both devices unhealthy a GPU instance waits, saying so", func(t *testing.T) {
		second := device(b)
		xid(second, 79, "GPU has fallen off the bus.")
		testenv.Eventually(t, 30*time.Second, "the second device marked", func() bool {
			return c.count("host_gpus WHERE unhealthy_since IS NOT NULL") == 2
		})
		pending = c.createOf(gpuFlavor, "gpu-c", "RUNNING")
		testenv.Eventually(t, 30*time.Second, "the instance PENDING with the devices' health", func() bool {
			state, reason := c.instanceState(pending)
			return state == "PENDING" && strings.Contains(reason, "GPUs "+fake.GPUModel+" on live hosts: 2, 2 unhealthy, 1 taken")
		})
	})

	t.Run("setting the host's capacity clears no mark", func(t *testing.T) {
		gpus := []map[string]any{}
		for i := range 2 {
			gpus = append(gpus, map[string]any{"address": fake.GPUAddress(i), "vendor": "NVIDIA", "model": fake.GPUModel})
		}
		c.must(c.operator, `mutation($h: ID!, $g: [GpuInput!]) { setHostCapacity(input: {hostId: $h, vcpus: 16, memoryMb: 16384, diskGb: 100000, gpus: $g}) { host { id } } }`,
			map[string]any{"h": hostID, "g": gpus})
		if n := c.count("host_gpus WHERE unhealthy_since IS NOT NULL AND last_xid = 79"); n != 2 {
			t.Fatalf("%d devices unhealthy after setHostCapacity, want 2", n)
		}
	})

	t.Run("clearing a mark is for operators and names what does not exist", func(t *testing.T) {
		clear := `mutation($h: ID!, $a: String!) { clearGpuHealth(input: {hostId: $h, address: $a}) { host { id } } }`
		cases := []struct {
			name, token, host, address, code, field string
		}{
			{"a member", c.member, hostID, first, "FORBIDDEN", ""},
			{"an unknown host", c.operator, ids.Encode(ids.Host, ids.New()), first, "NOT_FOUND", "hostId"},
			{"an unknown device", c.operator, hostID, "0000:99:00.0", "NOT_FOUND", "address"},
			{"not a PCI address", c.operator, hostID, "PCI:0000:3b:00", "INVALID_INPUT", "address"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, errs := c.gql(tc.token, clear, map[string]any{"h": tc.host, "a": tc.address})
				if len(errs) != 1 {
					t.Fatalf("errors %v, want one %s", errs, tc.code)
				}
				ext, _ := errs[0]["extensions"].(map[string]any)
				if ext["code"] != tc.code || (tc.field != "" && ext["field"] != tc.field) {
					t.Fatalf("error %v, want %s naming %q", errs[0], tc.code, tc.field)
				}
			})
		}
		if n := c.count("host_gpus WHERE unhealthy_since IS NOT NULL"); n != 2 {
			t.Fatalf("%d devices unhealthy after refused clears, want 2", n)
		}
	})

	t.Run("clearing the mark makes the device placeable again", func(t *testing.T) {
		c.must(c.operator, `mutation($h: ID!, $a: String!) { clearGpuHealth(input: {hostId: $h, address: $a}) { host { id } } }`,
			map[string]any{"h": hostID, "a": first})
		running(pending)
		if got := device(pending); got != first {
			t.Fatalf("placed on %s, want the cleared %s", got, first)
		}
		if n := c.count("audit_events WHERE action = 'host.clearGpuHealth' AND outcome = 'success'"); n != 1 {
			t.Fatalf("%d host.clearGpuHealth audit rows, want 1", n)
		}
		data, errs := c.gql(c.operator, `{ hosts { gpus { address healthy unhealthySince healthReason lastXid lastXidAt } } }`, nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, g := range data["hosts"].([]any)[0].(map[string]any)["gpus"].([]any) {
			g := g.(map[string]any)
			healthy := g["address"] == first
			if g["healthy"] != healthy || g["lastXid"] != float64(79) || g["lastXidAt"] == nil || (g["healthReason"] == nil) == !healthy {
				t.Fatalf("GPU %v: want healthy %v, last Xid 79", g, healthy)
			}
		}
	})
}

// TestConsoleGPUHealth: the hosts page shows a GPU a fatal Xid marked
// unhealthy, with the Xid, and its "Clear mark" action (confirmed) clears
// the mark, as the API then says.
func TestConsoleGPUHealth(t *testing.T) {
	chrome := chromium(t)
	c, xid := gpuCluster(t)
	bad := fake.GPUAddress(1)
	testenv.Eventually(t, 30*time.Second, "the host's 2 GPUs adopted", func() bool { return c.count("host_gpus") == 2 })
	xid(bad, 79, "GPU has fallen off the bus.")
	testenv.Eventually(t, 30*time.Second, "the device marked", func() bool { return c.count("host_gpus WHERE unhealthy_since IS NOT NULL") == 1 })

	b := newBrowser(t, chrome)
	b.do("open the console", chromedp.Navigate(c.url+"/"))
	b.wait("the login form", `document.documentElement.dataset.usable === 'login'`)
	b.do("log in as the operator", chromedp.SendKeys(chromedp.ID("login-token"), c.operator), chromedp.Click(chromedp.ID("login-submit")))
	b.wait("logged in", `!!document.querySelector('a[href="#/ops/hosts"]')`)
	b.do("open hosts", chromedp.Click(chromedp.CSS(`a[href="#/ops/hosts"]`)))
	b.waitFor(30*time.Second, "the unhealthy GPU with its Xid, the healthy one without", fmt.Sprintf(`(() => {
		const bad = document.querySelector('.gpu[data-address=%q]'), good = document.querySelector('.gpu[data-address=%q]');
		return !!bad && !!good && bad.dataset.healthy === 'false' && bad.textContent.includes('Xid 79: GPU has fallen off the bus.') &&
			bad.textContent.includes('last Xid 79') && good.dataset.healthy === 'true' && !good.querySelector('button');
	})()`, bad, fake.GPUAddress(0)))
	b.do("clear the mark", chromedp.Click(chromedp.CSS(fmt.Sprintf(`.gpu[data-address=%q] button`, bad))))
	b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
	b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	b.waitFor(30*time.Second, "the GPU healthy", fmt.Sprintf(`document.querySelector('.gpu[data-address=%q]')?.dataset.healthy === 'true'`, bad))
	if n := c.count("host_gpus WHERE unhealthy_since IS NOT NULL"); n != 0 {
		t.Fatalf("%d devices still unhealthy after the console cleared the mark", n)
	}
	b.noErrors()
}
