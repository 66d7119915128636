package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleBootstraps: on `dev --sim 2` with a host listener, the
// operator's Bootstraps page refuses a malformed name in the browser
// (nothing sent) and a taken one at its field (the API's CONFLICT), then
// asks the emulated Hetzner account for a host, and the new bootstrap's
// card shows it PROVISIONING with its deadline; one asked for through the
// API meanwhile appears and moves on by itself, without a reload and
// without the page asking for the list again (its live subscription,
// providerBootstrapEvents, carries every change).
func TestConsoleBootstraps(t *testing.T) {
	chrome := chromium(t)
	hostAddr := freeAddr(t)
	dev := startDev(t, "BC_HOST_LISTEN="+hostAddr, "BC_HOST_URL=https://"+hostAddr)
	b := newBrowser(t, chrome)
	b.shots = screenshotsDir(t)
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	step := steps(t)
	pick := dev.catalog(t)
	hetzner := ""
	for _, a := range dev.gql(t, dev.operator, `{ providerAccounts { id name } }`, nil)["providerAccounts"].([]any) {
		if a := a.(map[string]any); a["name"] == "hetzner-emulator" {
			hetzner = a["id"].(string)
		}
	}
	taken := dev.gql(t, dev.operator, `{ hosts { name } }`, nil)["hosts"].([]any)[0].(map[string]any)["name"].(string)

	b.do("open the console", chromedp.Navigate(dev.url+"/#/ops/bootstraps"))
	b.wait("the login form", `document.documentElement.dataset.usable === 'login'`)
	b.do("log in as the operator", chromedp.SendKeys(chromedp.ID("login-token"), dev.operator), chromedp.Click(chromedp.ID("login-submit")))
	b.wait("the bootstraps page with its form", `!!document.getElementById('bootstrap-form') && !!document.querySelector('#bootstraps-body .state-empty')`)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	b.do("spy on requests", chromedp.Evaluate[chromedp.Void](`window.__sent = []; { const f = window.fetch;
		window.fetch = (url, opts) => { window.__sent.push(String(opts?.body || '')); return f(url, opts); }; }`))
	fill := func(name string) {
		b.do("fill the form", chromedp.Evaluate[chromedp.Void](`(() => {
			const f = document.getElementById('bootstrap-form');
			f.elements.name.value = `+jsString(name)+`;
			f.elements.account.value = `+jsString(hetzner)+`;
			f.elements.pool.value = `+jsString(pick("pools", "sim"))+`;
			f.elements.serverType.value = 'cx22';
			f.elements.image.value = 'debian-12';
		})()`), chromedp.Click(chromedp.ID("bootstrap-submit")))
	}

	step("a malformed name is refused in the browser", func(t *testing.T) {
		b := b.with(t)
		fill("Not A Slug")
		b.wait("the name's error", `document.getElementById('f-name-error').textContent.includes('slug') &&
			document.getElementById('f-name').getAttribute('aria-invalid') === 'true'`)
		if n := dev.auditCount(t, "providerBootstrap.create"); n != 0 {
			t.Errorf("%d creates audited for a name the browser refused", n)
		}
	})

	step("a taken name is refused at its field", func(t *testing.T) {
		b := b.with(t)
		fill(taken)
		b.wait("the API's conflict at the name", `document.getElementById('f-name-error').textContent.includes(`+jsString(taken)+`) &&
			document.getElementById('f-name').getAttribute('aria-invalid') === 'true'`)
	})

	step("a bootstrap's progress shows live", func(t *testing.T) {
		b := b.with(t)
		fill("rented-1")
		b.wait("the card, pending or further", `!!document.querySelector('#bootstraps-body .bootstrap h2')?.textContent.includes('rented-1')`)
		b.waitFor(30*time.Second, "the card provisioning, with its deadline", `document.querySelector('#bootstraps-body .bootstrap')?.dataset.state === 'PROVISIONING' &&
			document.querySelector('#bootstraps-body .bootstrap').textContent.includes('Must join by')`)
		// One asked for elsewhere shows up, and moves on, by itself.
		dev.gql(t, dev.operator, `mutation($in: CreateProviderBootstrapInput!) { createProviderBootstrap(input: $in) { providerBootstrap { id } } }`,
			map[string]any{"in": map[string]any{"providerAccountId": hetzner, "poolId": pick("pools", "sim"), "serverType": "cx32", "image": "debian-12", "name": "rented-2"}})
		b.waitFor(30*time.Second, "rented-2's card, provisioning", `[...document.querySelectorAll('#bootstraps-body .bootstrap')].some((c) =>
			c.querySelector('h2').textContent.includes('rented-2') && c.dataset.state === 'PROVISIONING')`)
		if !evaluate[bool](b, `window.__sameDocument === true`) {
			t.Error("the page was reloaded")
		}
		if n := evaluate[int](b, `window.__sent.filter((body) => body.includes('providerBootstraps')).length`); n != 0 {
			t.Errorf("the page read the list %d times: it polls instead of following its subscription", n)
		}
		b.shot("bootstraps")
		b.noErrors()
	})
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q := []byte{'\''}
	for _, c := range []byte(s) {
		if c == '\'' || c == '\\' {
			q = append(q, '\\')
		}
		q = append(q, c)
	}
	return string(append(q, '\''))
}
