package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// sandboxChurnOps is how many random operations TestSandboxChurn makes.
const sandboxChurnOps = 300

// TestSandboxChurn makes random sandbox operations (creates warm and cold,
// some short-lived; timeouts set; pauses, resumes, deletes; template env
// and warm count changes) from 8 clients, with one of two reconcilers
// SIGKILLed mid-run and restarted. Every instance reaches its desired
// state, every pool its warm count, no warm instance is claimed by two
// sandboxes, and once everything is deleted nothing is left.
func TestSandboxChurn(t *testing.T) {
	t.Parallel()
	c := sandboxCluster(t, options{hosts: 3, reconcilers: 2, hostVcpus: 80})
	var tmpls []string
	for i, n := range []int{4, 2} {
		tmpls = append(tmpls, c.sandboxTemplate(fmt.Sprintf("t%d", i), map[string]any{"warmCount": n, "maxTimeout": 600}))
	}
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	var (
		mu   sync.Mutex
		live []string
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	pick := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(live) == 0 {
			return ""
		}
		return live[rng.IntN(len(live))]
	}
	// Operations on a sandbox that ended meanwhile are FAILED_PRECONDITION.
	allowed := func(op string, codes []string) {
		for _, code := range codes {
			if code != "FAILED_PRECONDITION" {
				t.Errorf("%s: %v", op, codes)
			}
		}
	}
	for i := range sandboxChurnOps {
		if i == sandboxChurnOps/2 {
			c.reconcs[0].signal(syscall.SIGKILL)
			t.Log("killed reconcile-0")
		}
		if i == sandboxChurnOps*3/4 {
			c.reconcs[0].start()
			t.Log("restarted reconcile-0")
		}
		ti := rng.IntN(len(tmpls))
		op := []string{"create", "create", "create", "cold", "setSandboxTimeout", "pauseSandbox", "resumeSandbox", "deleteSandbox", "template"}[rng.IntN(9)]
		id := pick()
		if id == "" && op != "template" {
			op = "create"
		}
		timeout := []int{5, 600, 600}[rng.IntN(3)]
		env := fmt.Sprint(rng.IntN(3))
		warm := rng.IntN(5)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			switch op {
			case "create", "cold":
				extra := map[string]any{"timeout": timeout}
				if op == "cold" {
					extra["env"] = []map[string]any{{"name": "OWN", "value": env}}
				}
				ref, errs := c.tryCreateSandbox(c.url, tmpls[ti], extra)
				if len(errs) > 0 {
					t.Errorf("createSandbox: %v", errs)
					return
				}
				mu.Lock()
				live = append(live, ref.id)
				mu.Unlock()
			case "setSandboxTimeout":
				allowed(op, c.sandboxOp(op, id, map[string]any{"timeout": timeout}))
			case "template":
				c.updateTemplate(tmpls[ti], map[string]any{"warmCount": warm, "env": []map[string]any{{"name": "V", "value": env}}})
			default:
				allowed(op, c.sandboxOp(op, id, nil))
				if op == "deleteSandbox" {
					mu.Lock()
					live = slices.DeleteFunc(live, func(s string) bool { return s == id })
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	t.Logf("settled in %v", c.settle(90*time.Second))
	for ti, tmpl := range tmpls {
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("template %d's pool to hold its warm count, all of its version", ti), func() bool {
			return c.warm(tmpl, "PAUSED", true) == c.warmCount(tmpl) && c.warm(tmpl, "", false) == 0
		})
	}
	if warm, claimed := c.count("sandboxes WHERE started_from = 'WARM'"), c.count("instances WHERE claimed_at IS NOT NULL"); warm != claimed {
		t.Errorf("%d sandboxes started WARM but %d warm instances claimed", warm, claimed)
	}
	if n := c.count("(SELECT sandbox_id FROM instances WHERE sandbox_id IS NOT NULL GROUP BY sandbox_id HAVING count(*) > 1) x"); n != 0 {
		t.Errorf("%d sandboxes hold more than one instance", n)
	}

	for _, id := range live {
		allowed("deleteSandbox", c.sandboxOp("deleteSandbox", id, nil))
	}
	for _, tmpl := range tmpls {
		c.must(c.member, `mutation($id: ID!) { deleteSandboxTemplate(input: {id: $id}) { sandboxTemplate { id } } }`, map[string]any{"id": tmpl})
	}
	t.Logf("all deleted in %v", c.settle(90*time.Second))
	c.noLeaks()
}
