package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/better-compute/vps/internal/testenv"
)

// TestConsoleAdmin drives the operator's forms in headless Chromium
// against `better-compute dev --sim 2`: for tenants and quotas, pools and
// IP ranges, flavors, images, tokens, hosts and provider accounts, a
// submit the browser or the API refuses shows the error at its field, and
// a good one makes the thing, which the page then lists; a token, and an
// adopted host's join command, are shown once.
func TestConsoleAdmin(t *testing.T) {
	chrome := chromium(t)
	dev := startDev(t)
	b := newBrowser(t, chrome)
	step := steps(t)
	b.do("open the console", chromedp.Navigate(dev.url+"/"))
	b.wait("the login form", `document.documentElement.dataset.usable === 'login'`)
	b.do("log in as the operator", chromedp.SendKeys(chromedp.ID("login-token"), dev.operator), chromedp.Click(chromedp.ID("login-submit")))
	b.wait("the console", `document.documentElement.dataset.ready === 'instances'`)

	js := func(v string) string { s, _ := json.Marshal(v); return string(s) }
	open := func(b *browser, hash, body string) {
		b.do("open "+hash, chromedp.Evaluate[chromedp.Void](`location.hash = `+js(hash)))
		b.wait(hash, `!!document.querySelector('#`+body+`') && !document.querySelector('#`+body+` .state-loading')`)
	}
	// fill opens the form (when folded) and sets its fields, by key.
	fill := func(b *browser, prefix string, values map[string]string) {
		b.do("open the form "+prefix, chromedp.Evaluate[chromedp.Void](`(() => { const d = document.getElementById(`+js(prefix+"-details")+`); if (d) d.open = true; })()`))
		for k, v := range values {
			b.do("set "+k, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.getElementById(%s);
				if (el.type === 'checkbox') el.checked = %s === 'true'; else el.value = %s; })()`, js(prefix+"-"+k), js(v), js(v))))
		}
	}
	submit := func(b *browser, prefix string) {
		b.do("submit "+prefix, chromedp.Evaluate[chromedp.Void](`document.getElementById(`+js(prefix+"-form")+`).requestSubmit()`))
	}
	fieldError := func(b *browser, prefix, key, says string) {
		b.wait(prefix+" error at "+key, fmt.Sprintf(`document.getElementById(%s)?.textContent.includes(%s) &&
			document.getElementById(%s).getAttribute('aria-invalid') === 'true'`, js(prefix+"-"+key+"-error"), js(says), js(prefix+"-"+key)))
	}
	listed := func(b *browser, body, text string) {
		b.wait(text+" listed", fmt.Sprintf(`document.getElementById(%s)?.textContent.includes(%s)`, js(body), js(text)))
	}
	// refuseThenSubmit opens a page and submits one of its forms with bad
	// values, refused at field with says, then with good ones.
	refuseThenSubmit := func(b *browser, hash, body, prefix string, bad map[string]string, field, says string, good map[string]string) {
		open(b, hash, body)
		fill(b, prefix, bad)
		submit(b, prefix)
		fieldError(b, prefix, field, says)
		fill(b, prefix, good)
		submit(b, prefix)
	}
	// form runs refuseThenSubmit, after which text is listed in body.
	form := func(name, hash, body, prefix string, bad map[string]string, field, says string, good map[string]string, text string) {
		step(name, func(t *testing.T) {
			b := b.with(t)
			refuseThenSubmit(b, hash, body, prefix, bad, field, says, good)
			listed(b, body, text)
		})
	}

	form("a tenant: a name taken, then a new one", "#/ops/tenants", "tenants-body", "new-tenant",
		map[string]string{"name": "demo"}, "name", "already", map[string]string{"name": "acme"}, "acme")
	step("a tenant's quota", func(t *testing.T) {
		b := b.with(t)
		id := evaluate[string](b, `[...document.querySelectorAll('#tenants-body section')].find((s) => s.querySelector('h2').textContent === 'acme').dataset.id`)
		// A limit the form leaves as it is stays: setQuota replaces them all.
		dev.gql(t, dev.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, snapshots: 3}) { tenant { id } } }`, map[string]any{"t": id})
		b.do("reload", chromedp.Evaluate[chromedp.Void](`location.hash = '#/ops/pools'`))
		open(b, "#/ops/tenants", "tenants-body")
		prefix := "quota-" + id
		fill(b, prefix, map[string]string{"instances": "7", "vcpus": "-3"})
		submit(b, prefix)
		fieldError(b, prefix, "vcpus", "whole number")
		fill(b, prefix, map[string]string{"vcpus": "16"})
		submit(b, prefix)
		b.wait("the quota set", `document.getElementById('tenants-body-said').textContent.includes('Set the quota of acme')`)
		data := dev.gql(t, dev.operator, `query($id: ID!) { node(id: $id) { ... on Tenant { quota { instances vcpus snapshots } } } }`, map[string]any{"id": id})
		if q := data["node"].(map[string]any)["quota"].(map[string]any); q["instances"] != float64(7) || q["vcpus"] != float64(16) || q["snapshots"] != float64(3) {
			t.Fatalf("quota %v", q)
		}
	})
	form("a pool: a name taken, then a new one", "#/ops/pools", "pools-body", "new-pool",
		map[string]string{"name": "sim"}, "name", "already", map[string]string{"name": "fra9", "runtime": "fake"}, "fra9")
	step("an IP range: a bad network, then a good one", func(t *testing.T) {
		b := b.with(t)
		id := evaluate[string](b, `[...document.querySelectorAll('#pools-body section')].find((s) => s.querySelector('h2').textContent.startsWith('fra9')).dataset.id`)
		prefix := "ip-" + id
		fill(b, prefix, map[string]string{"cidr": "10.30.0.0/33", "gateway": "10.30.0.1", "rangeStart": "10.30.0.10", "rangeEnd": "10.30.0.200"})
		submit(b, prefix)
		fieldError(b, prefix, "cidr", "")
		fill(b, prefix, map[string]string{"cidr": "10.30.0.0/24"})
		submit(b, prefix)
		listed(b, "pools-body", "10.30.0.0/24")
	})
	form("a flavor: a name taken, then a new one", "#/ops/flavors", "flavors-body", "new-flavor",
		map[string]string{"name": "small", "vcpus": "4", "memoryMb": "8192", "diskGb": "80"}, "name", "already", map[string]string{"name": "c4-m8"}, "c4-m8")
	form("an image: a bad checksum, then a good one", "#/ops/images", "images-body", "new-image",
		map[string]string{"name": "alpine", "sourceUrl": "https://images.example/alpine.qcow2", "sha256": "abc"}, "sha256", "",
		map[string]string{"sha256": strings.Repeat("ab", 32)}, "alpine")
	form("a provider account: settings not JSON, then good ones", "#/ops/providers", "providers-body", "new-account",
		map[string]string{"name": "burst", "credentials": "hcloud-5ecr3t", "settings": "{location"}, "settings", "not JSON",
		map[string]string{"settings": `{"location": "fsn1"}`}, "burst")
	step("the provider account's credentials are never shown", func(t *testing.T) {
		b := b.with(t)
		if evaluate[bool](b, `document.documentElement.outerHTML.includes('hcloud-5ecr3t') || [...document.querySelectorAll('input, textarea')].some((i) => i.value.includes('hcloud-5ecr3t'))`) {
			t.Fatal("the credentials are in the page")
		}
	})
	step("a token: shown once, listed, revoked", func(t *testing.T) {
		b := b.with(t)
		refuseThenSubmit(b, "#/ops/tokens", "tokens-body", "new-token", map[string]string{"name": ""}, "name", "required", map[string]string{"name": "acme-ci"})
		b.wait("the token, once", `document.getElementById('once-dialog')?.open && document.getElementById('once-token').value.startsWith('bct_')`)
		token := evaluate[string](b, `document.getElementById('once-token').value`)
		b.do("dismiss it", chromedp.Click(chromedp.ID("once-done")))
		b.wait("the token gone", fmt.Sprintf(`!document.getElementById('once-dialog') && !document.documentElement.outerHTML.includes(%s)`, js(token)))
		listed(b, "tokens-body", "acme-ci")
		if _, errs, err := post(dev.url, token, `{ viewer { principal { name } } }`, nil); err != nil || len(errs) > 0 {
			t.Fatalf("the token shown does not work: %v %v", errs, err)
		}
		id := evaluate[string](b, `document.querySelector('#tokens-body tr[data-name="acme-ci"]').dataset.id`)
		b.do("revoke it", chromedp.Click(chromedp.ID("revoke-token-"+id)))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.wait("revoked", `document.querySelector('#tokens-body tr[data-name="acme-ci"]')?.textContent.includes('revoked')`)
		if _, errs, _ := post(dev.url, token, `{ viewer { principal { name } } }`, nil); len(errs) == 0 {
			t.Fatal("the revoked token still works")
		}
	})
	step("an instance's timeline from its recorded history", func(t *testing.T) {
		b := b.with(t)
		pick := dev.catalog(t)
		created := dev.gql(t, dev.member, `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`,
			map[string]any{"in": map[string]any{"poolId": pick("pools", "sim"), "flavorId": pick("flavors", "small"), "imageId": pick("images", "debian-12"),
				"name": "history-1", "sshKeys": []string{sshKey}}})
		id := created["createInstance"].(map[string]any)["instance"].(map[string]any)["id"].(string)
		state := func() string {
			return dev.gql(t, dev.member, `query($id: ID!) { instance(id: $id) { state } }`, map[string]any{"id": id})["instance"].(map[string]any)["state"].(string)
		}
		if !testenv.Within(60*time.Second, func() bool { return state() == "RUNNING" }) {
			t.Fatalf("history-1 is %s, not RUNNING", state())
		}
		// The page opens after it ran: what it went through comes from the
		// record, before the entry of when the page opened.
		open(b, "#/instances/"+id, "timeline")
		b.wait("the recorded states", `[...document.querySelectorAll('#timeline li')].map((li) => li.dataset.state).join(' ') === 'PENDING PROVISIONING STARTING RUNNING RUNNING' &&
			document.querySelector('#timeline li:last-child').textContent.includes('when the page opened')`)
	})
	step("a host's page: its instances and what they used", func(t *testing.T) {
		b := b.with(t)
		data := dev.gql(t, dev.operator, `{ instances(filter: {name: "history-1"}) { nodes { host { id name } } } }`, nil)
		host := data["instances"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["host"].(map[string]any)
		open(b, "#/ops/hosts", "hosts-body")
		b.do("open the host", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="#/ops/hosts/%s"]`, host["id"]))))
		b.wait("its instances", `document.documentElement.dataset.ready === 'host' && document.getElementById('host-body').textContent.includes('history-1')`)
		// The sim hosts report every few seconds and dev writes a point
		// every 5 s: two points give a CPU use, the page refreshes every 10 s.
		b.waitFor(45*time.Second, "its CPU and memory plotted", `Number(document.getElementById('plot-host-cpu')?.dataset.points) >= 1 &&
			Number(document.getElementById('plot-host-memory')?.dataset.points) >= 2`)
		b.noErrors()
	})
	step("every timestamp in one format, with its zone", func(t *testing.T) {
		b := b.with(t)
		for _, page := range []struct{ hash, body string }{{"#/ops/tenants", "tenants-body"}, {"#/ops/tokens", "tokens-body"}, {"#/ops/hosts", "hosts-body"}} {
			open(b, page.hash, page.body)
			bad := evaluate[[]string](b, `(() => {
				const re = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC([+-]\d{2}:\d{2})?$/;
				const times = [...document.querySelectorAll('main time')];
				return times.length ? times.filter((t) => !re.test(t.title) && !re.test(t.textContent)).map((t) => t.outerHTML) : ['no timestamps'];
			})()`)
			if len(bad) > 0 {
				t.Errorf("%s: %v", page.hash, bad)
			}
		}
	})
	step("a host: adopted, its join command shown once, deleted", func(t *testing.T) {
		b := b.with(t)
		refuseThenSubmit(b, "#/ops/hosts", "hosts-body", "new-host", map[string]string{"name": "-bad-"}, "name", "", map[string]string{"name": "hv-9"})
		b.wait("the join command, once", `document.getElementById('once-dialog')?.open && document.getElementById('once-command').value.startsWith('better-compute host --server https://')`)
		b.do("dismiss it", chromedp.Click(chromedp.ID("once-done")))
		listed(b, "hosts-body", "hv-9")
		id := evaluate[string](b, `[...document.querySelectorAll('#hosts-body section')].find((s) => s.querySelector('h2').textContent.startsWith('hv-9')).dataset.id`)
		b.do("delete it", chromedp.Click(chromedp.ID("delete-host-"+id)))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.wait("hv-9 gone", `!document.getElementById('hosts-body').textContent.includes('hv-9')`)
		b.noErrors()
	})
}
