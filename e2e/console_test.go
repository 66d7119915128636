package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/internal/testenv"
)

// screenshotsDir is where the console tests leave their pictures: the
// directory BC_SCREENSHOTS names (`make screenshots` sets it to
// docs/console, for docs/console.md), else the test's temporary directory,
// so a test run leaves the committed pictures alone.
func screenshotsDir(t *testing.T) string {
	if dir := os.Getenv("BC_SCREENSHOTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// TestConsole drives the web console in headless Chromium against
// `better-compute dev --sim 2`, as a member and as an operator: log in,
// create an instance and watch it run without a reload, stop and delete it,
// field errors from the browser and from the API, the operators-only page,
// the connection dropping and coming back, and the hosts' bars. It measures
// the first load and saves screenshots of the main pages.
func TestConsole(t *testing.T) {
	chrome := chromium(t)
	dev := startDev(t)
	b := newBrowser(t, chrome)
	b.shots = screenshotsDir(t)
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	step := steps(t)

	// The first load, with an empty cache: the login form.
	b.do("open the console", chromedp.Navigate(dev.url+"/"))
	b.wait("the login form is usable", `document.documentElement.dataset.usable === 'login' && document.activeElement?.id === 'login-token'`)
	first := b.firstLoad()
	t.Logf("first load (login): %d files, %d bytes transferred (%d encoded, %d decoded), usable after %.0f ms",
		first.Files, first.Transfer, first.Encoded, first.Decoded, first.Usable)
	if first.Transfer > 300<<10 || first.Transfer <= 0 {
		t.Errorf("the first load transferred %d bytes, want under 300 KB", first.Transfer)
	}
	b.shot("login")

	step("a wrong token is refused at the field", func(t *testing.T) {
		b := b.with(t)
		b.do("type a wrong token", chromedp.SendKeys(chromedp.ID("login-token"), "bct_not-a-token"), chromedp.Click(chromedp.ID("login-submit")))
		b.wait("the token's error", `document.getElementById('login-token-error').textContent.includes('not valid') &&
			document.getElementById('login-token').getAttribute('aria-invalid') === 'true'`)
		b.do("clear the token", chromedp.Evaluate[chromedp.Void](`document.getElementById('login-token').value = ''`))
	})

	// Log in as the member of tenant demo.
	b.do("log in as the member", chromedp.SendKeys(chromedp.ID("login-token"), dev.member), chromedp.Click(chromedp.ID("login-submit")))
	b.wait("the instances page after logging in", `document.documentElement.dataset.ready === 'instances' && !!document.querySelector('#instances-body .state-empty, #instances-table')`)
	b.wait("the live connection", `document.getElementById('conn')?.dataset.state === 'live'`)
	afterLogin := evaluate[float64](b, `performance.getEntriesByName('bc-ready:instances').at(-1).startTime - performance.getEntriesByName('bc-login-submit').at(-1).startTime`)
	t.Logf("log in to instances list rendered: %.0f ms", afterLogin)
	if who := evaluate[string](b, `document.getElementById('who').textContent`); !strings.Contains(who, "demo-member") || !strings.Contains(who, "member") || !strings.Contains(who, "demo") {
		t.Errorf("who is logged in: %q", who)
	}
	if token := evaluate[string](b, `sessionStorage.getItem('bc.token')`); token != dev.member {
		t.Errorf("sessionStorage holds %q", token)
	}
	if n := evaluate[int](b, `localStorage.length + document.cookie.length`); n != 0 {
		t.Errorf("the token leaked into localStorage or cookies")
	}
	// Anything that reloads the page loses this.
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))

	step("a member sees no operator pages", func(t *testing.T) {
		b := b.with(t)
		if n := evaluate[int](b, `document.querySelectorAll('a[href^="#/ops/"]').length`); n != 0 {
			t.Errorf("the member sees %d operator links", n)
		}
		b.do("type an operator route", chromedp.Evaluate[chromedp.Void](`location.hash = '#/ops/hosts'`))
		b.wait("the operators-only page", `document.getElementById('main').dataset.page === 'operators-only' &&
			document.querySelector('main h1').textContent === 'Operators only'`)
		if n := evaluate[int](b, `document.querySelectorAll('[role=meter]').length`); n != 0 {
			t.Errorf("the member sees %d host bars", n)
		}
		b.do("back to instances", chromedp.Evaluate[chromedp.Void](`location.hash = '#/instances'`))
		b.wait("instances", `document.getElementById('main').dataset.page === 'instances'`)
	})

	step("SSH keys are checked in the browser", func(t *testing.T) {
		b := b.with(t)
		checkKeysInBrowser(t, b)
	})

	// Watch what the page sends from here on.
	b.do("spy on requests", chromedp.Evaluate[chromedp.Void](`window.__sent = []; { const f = window.fetch;
		window.fetch = (url, opts) => { window.__sent.push(String(opts?.body || '')); return f(url, opts); }; }`))

	b.do("open the create form", chromedp.Click(chromedp.ID("new-instance")))
	b.wait("the create form", `!!document.getElementById('create-form') && document.activeElement?.id === 'f-name'`)
	b.do("fill the form with a bad key",
		chromedp.SendKeys(chromedp.ID("f-name"), "console-1"),
		chromedp.Evaluate[chromedp.Void](`{ const s = document.getElementById('f-pool'); s.value = [...s.options].find((o) => o.text.startsWith('sim')).value; }`),
		chromedp.SetValue(chromedp.ID("f-sshKeys"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9 you@laptop"),
		chromedp.Click(chromedp.ID("create-submit")))
	step("a bad SSH key shows an error at the field and nothing is sent", func(t *testing.T) {
		b := b.with(t)
		b.wait("the key's error", `document.getElementById('f-sshKeys-error').textContent.includes('line 1') &&
			document.getElementById('f-sshKeys').getAttribute('aria-invalid') === 'true' &&
			document.getElementById('f-sshKeys').getAttribute('aria-describedby').includes('f-sshKeys-error') &&
			document.activeElement?.id === 'f-sshKeys'`)
		if sent := evaluate[[]string](b, `window.__sent.filter((s) => s.includes('createInstance'))`); len(sent) != 0 {
			t.Errorf("the page sent createInstance with a bad key: %v", sent)
		}
		if n := dev.auditCount(t, "instance.create"); n != 0 {
			t.Errorf("the server saw %d createInstance", n)
		}
	})
	b.shot("create-error")

	// Now with a good key: the instance runs, and the badge says so
	// without a reload.
	b.do("fix the key and create", chromedp.SetValue(chromedp.ID("f-sshKeys"), sshKey), chromedp.Click(chromedp.ID("create-submit")))
	b.wait("the instance's page", `location.hash.startsWith('#/instances/ins_') && !!document.querySelector('#instance-state .badge')`)
	id := strings.TrimPrefix(evaluate[string](b, `location.hash`), "#/instances/")
	start := time.Now()
	b.waitFor(60*time.Second, "the badge to say RUNNING", `document.querySelector('#instance-state .badge')?.dataset.state === 'RUNNING' &&
		document.getElementById('instance-addresses').textContent.includes('10.77.0.')`)
	t.Logf("instance %s RUNNING in the page %v after the create was answered", id, time.Since(start).Round(time.Millisecond))
	if !evaluate[bool](b, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded")
	}
	if n := evaluate[int](b, `document.querySelectorAll('#timeline li').length`); n < 2 {
		t.Errorf("the timeline has %d entries, want the states it went through", n)
	}
	if got, want := evaluate[string](b, `document.getElementById('instance-certified').textContent`), certifiedText(t, dev, id); got != want && !strings.HasPrefix(got, want+" ") {
		t.Errorf("the page says the host certificate is %q, the API %q", got, want)
	}
	b.shot("instance")

	step("stop with a confirmation", func(t *testing.T) {
		b := b.with(t)
		b.do("stop", chromedp.Click(chromedp.ID("action-stop")))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open && document.activeElement?.id === 'confirm-cancel'`)
		b.do("cancel with Escape", chromedp.KeyEvent(kb.Escape))
		b.wait("the dialog to close", `!document.getElementById('confirm-dialog') && document.activeElement?.id === 'action-stop'`)
		if state := evaluate[string](b, `document.querySelector('#instance-state .badge').dataset.state`); state != "RUNNING" {
			t.Fatalf("cancelled, yet the instance is %s", state)
		}
		b.do("stop", chromedp.Click(chromedp.ID("action-stop")))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.waitFor(60*time.Second, "the badge to say STOPPED", `document.querySelector('#instance-state .badge')?.dataset.state === 'STOPPED' && !!document.getElementById('action-start')`)
	})

	step("an API error shows at the field it names", func(t *testing.T) {
		b := b.with(t)
		b.do("open the create form", chromedp.Evaluate[chromedp.Void](`location.hash = '#/instances/new'`))
		b.wait("the create form", `!!document.getElementById('create-form')`)
		// A flavor the cloud pool cannot serve: INVALID_INPUT on flavorId.
		b.do("pick a cloud pool", chromedp.SendKeys(chromedp.ID("f-name"), "console-1"), chromedp.SetValue(chromedp.ID("f-sshKeys"), sshKey),
			chromedp.Evaluate[chromedp.Void](`{ const s = document.getElementById('f-pool'); s.value = [...s.options].find((o) => o.text.startsWith('hetzner-emulated')).value;
				const f = document.getElementById('f-flavor'); f.value = [...f.options].find((o) => o.text.startsWith('small')).value; }`),
			chromedp.Click(chromedp.ID("create-submit")))
		b.wait("the flavor's error from the API", `document.getElementById('f-flavor-error').textContent.includes('no server type') &&
			document.getElementById('f-flavor').getAttribute('aria-invalid') === 'true' && document.activeElement?.id === 'f-flavor'`)
		// A name taken: CONFLICT on name.
		b.do("pick the sim pool", chromedp.Evaluate[chromedp.Void](`{ const s = document.getElementById('f-pool'); s.value = [...s.options].find((o) => o.text.startsWith('sim')).value; }`),
			chromedp.Click(chromedp.ID("create-submit")))
		b.wait("the name's error from the API", `document.getElementById('f-name-error').textContent.includes('exists') &&
			document.getElementById('f-name').getAttribute('aria-invalid') === 'true' && document.getElementById('f-flavor-error').textContent === ''`)
	})

	step("the list shows it live", func(t *testing.T) {
		b := b.with(t)
		b.do("open the list", chromedp.Click(chromedp.CSS(`nav a[href="#/instances"]`)))
		b.wait("its row", fmt.Sprintf(`document.querySelector('tr[data-id=%q] .badge')?.dataset.state === 'STOPPED'`, id))
		b.shot("instances")
		b.do("narrow screen", chromedp.EmulateViewport(375, 800))
		b.wait("the narrow layout", `getComputedStyle(document.querySelector('#instances-table thead')).position === 'absolute'`)
		if w := evaluate[int](b, `document.documentElement.scrollWidth`); w > 375 {
			t.Errorf("at 375 px the page is %d px wide", w)
		}
		b.shot("instances-narrow")
		b.do("wide screen", chromedp.EmulateViewport(1280, 800))
		// Start it from elsewhere: the list follows.
		dev.gql(t, dev.member, `mutation($id: ID!) { startInstance(input: {id: $id}) { instance { id } } }`, map[string]any{"id": id})
		b.waitFor(60*time.Second, "its row to say RUNNING", fmt.Sprintf(`document.querySelector('tr[data-id=%q] .badge')?.dataset.state === 'RUNNING'`, id))
	})

	step("delete with a confirmation", func(t *testing.T) {
		b := b.with(t)
		b.do("open the instance", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-id=%q] a`, id))))
		b.wait("the instance", `!!document.getElementById('action-delete')`)
		b.do("delete", chromedp.Click(chromedp.ID("action-delete")))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.waitFor(60*time.Second, "the badge to say DELETED", `document.querySelector('#instance-state .badge')?.dataset.state === 'DELETED' &&
			!!document.getElementById('instance-deleted') && !document.getElementById('action-delete')`)
	})
	if !evaluate[bool](b, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded")
	}

	step("the connection drops, the page says so, reconnects and resyncs", func(t *testing.T) {
		b := b.with(t)
		b.do("open the list", chromedp.Evaluate[chromedp.Void](`location.hash = '#/instances'`))
		// A list read after the delete leaves the deleted instance out.
		b.wait("the list, without the deleted instance", fmt.Sprintf(`document.getElementById('main').dataset.page === 'instances' &&
			!!document.querySelector('#instances-body .state-empty') && !document.querySelector('tr[data-id=%q]')`, id))
		dev.stop(t)
		b.waitFor(20*time.Second, "the banner", `document.getElementById('conn').dataset.state === 'down' &&
			document.getElementById('banner').dataset.kind === 'down' &&
			document.getElementById('banner').getAttribute('role') === 'status' &&
			document.getElementById('banner').textContent.includes('interrupted')`)
		b.shot("connection-lost")
		b.do("count the reads", chromedp.Evaluate[chromedp.Void](`window.__sent = []`))
		dev.start(t)
		b.waitFor(45*time.Second, "the connection to come back", `document.getElementById('conn').dataset.state === 'live' &&
			document.getElementById('banner').dataset.kind === 'ok'`)
		b.wait("the list re-read", `window.__sent.some((s) => s.includes('query Instances'))`)
		if !evaluate[bool](b, `window.__sameDocument === true`) {
			t.Fatal("the page was reloaded")
		}
	})

	step("log out forgets the token", func(t *testing.T) {
		b := b.with(t)
		b.do("log out", chromedp.Click(chromedp.ID("logout")))
		b.wait("the login form", `!!document.getElementById('login-form') && !document.getElementById('conn')`)
		if v := evaluate[*string](b, `sessionStorage.getItem('bc.token')`); v != nil {
			t.Errorf("the token is still kept: %q", *v)
		}
	})

	step("the operator sees new instances arrive, pages through them, and filters", func(t *testing.T) {
		b := b.with(t)
		// Logging in with the keyboard only: type the token, press Enter.
		b.do("log in as the operator", chromedp.SendKeys(chromedp.ID("login-token"), dev.operator+kb.Enter))
		b.wait("the instances page, empty", `document.documentElement.dataset.ready === 'instances' && !!document.querySelector('a[href="#/ops/hosts"]') &&
			!!document.querySelector('#instances-body .state-empty')`)
		// Instances created elsewhere appear in the list, and run.
		pick := dev.catalog(t)
		for i, flavor := range []string{"medium", "medium", "small"} {
			dev.gql(t, dev.member, `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`, map[string]any{"in": map[string]any{
				"poolId": pick("pools", "sim"), "flavorId": pick("flavors", flavor), "imageId": pick("images", "debian-12"),
				"name": fmt.Sprintf("web-%d", i+1), "sshKeys": []string{sshKey}}})
		}
		b.waitFor(60*time.Second, "the new instances, RUNNING", `document.querySelectorAll('#instances-table tbody tr').length === 3 &&
			[...document.querySelectorAll('#instances-table tbody tr')].filter((tr) => tr.querySelector('.badge').dataset.state === 'RUNNING').length === 3`)
		if !evaluate[bool](b, `[...document.querySelectorAll('#instances-table th')].some((th) => th.textContent === 'Tenant')`) {
			t.Error("the operator's list has no tenant column")
		}
		// Two a page.
		b.do("two a page", chromedp.Evaluate[chromedp.Void](`location.hash = '#/instances?size=2'`))
		b.wait("page 1", `document.querySelectorAll('#instances-table tbody tr').length === 2 && !!document.getElementById('page-next') && !document.getElementById('page-prev')`)
		first := evaluate[string](b, `[...document.querySelectorAll('#instances-table tbody tr')].map((tr) => tr.dataset.id).join()`)
		b.do("next page", chromedp.Click(chromedp.ID("page-next")))
		b.wait("page 2", `location.hash.includes('after=') && document.querySelectorAll('#instances-table tbody tr').length === 1 && !!document.getElementById('page-prev')`)
		second := evaluate[string](b, `[...document.querySelectorAll('#instances-table tbody tr')].map((tr) => tr.dataset.id).join()`)
		if second == first || strings.Contains(second, strings.Split(first, ",")[0]) {
			t.Errorf("page 2 (%s) repeats page 1 (%s)", second, first)
		}
		b.do("previous page", chromedp.Click(chromedp.ID("page-prev")))
		b.wait("page 1 again", fmt.Sprintf(`[...document.querySelectorAll('#instances-table tbody tr')].map((tr) => tr.dataset.id).join() === %q`, first))
		// The state filter.
		b.do("only DELETED", chromedp.SetValue(chromedp.ID("filter-state"), "DELETED"))
		b.wait("the deleted one", fmt.Sprintf(`location.hash.includes('state=DELETED') && document.querySelectorAll('#instances-table tbody tr').length === 1 &&
			!!document.querySelector('tr[data-id=%q]')`, id))
		// Every control on the list and the create form has a label.
		if n := evaluate[int](b, `[...document.querySelectorAll('main input, main select, main textarea')].filter((e) => e.labels.length === 0).length`); n != 0 {
			t.Errorf("%d controls of the list have no label", n)
		}
		b.do("open the create form", chromedp.Click(chromedp.ID("new-instance")))
		b.wait("the create form with a tenant to choose", `!!document.getElementById('f-tenant')`)
		if n := evaluate[int](b, `[...document.querySelectorAll('main input, main select, main textarea')].filter((e) => e.labels.length === 0).length`); n != 0 {
			t.Errorf("%d controls of the create form have no label", n)
		}
	})

	step("the operator sees hosts with bars", func(t *testing.T) {
		b := b.with(t)
		b.do("open hosts", chromedp.Click(chromedp.CSS(`a[href="#/ops/hosts"]`)))
		b.waitFor(30*time.Second, "two hosts with bars, holding the instances", `document.querySelectorAll('#hosts-body .host').length === 2 &&
			[...document.querySelectorAll('#hosts-body .host')].every((h) => h.querySelectorAll('[role=meter]').length >= 3 && h.dataset.alive === 'true') &&
			[...document.querySelectorAll('#hosts-body [role=meter][aria-label=vCPU]')].reduce((n, m) => n + Number(m.getAttribute('aria-valuenow')), 0) === 5`)
		b.shot("hosts")
		// Drain the first host (confirmed), then return it to service.
		host := evaluate[string](b, `document.querySelector('#hosts-body .host').dataset.id`)
		b.do("drain", chromedp.Click(chromedp.ID("drain-"+host)))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.wait("the host draining", fmt.Sprintf(`document.querySelector('.host[data-id=%q]')?.textContent.includes('draining') &&
			document.getElementById('drain-%s')?.textContent === 'Return to service'`, host, host))
		hosts := dev.gql(t, dev.operator, `{ hosts { id draining } }`, nil)["hosts"].([]any)
		for _, x := range hosts {
			if x := x.(map[string]any); x["id"] == host && x["draining"] != true {
				t.Errorf("the API says host %s is not draining", host)
			}
		}
		b.do("return to service", chromedp.Click(chromedp.ID("drain-"+host)))
		b.wait("the host in service", fmt.Sprintf(`document.getElementById('drain-%s')?.textContent === 'Drain' &&
			!document.querySelector('.host[data-id=%q]').textContent.includes('draining')`, host, host))
		for _, page := range []string{"pools", "flavors", "images", "tenants"} {
			b.do("open "+page, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="#/ops/%s"]`, page))))
			b.wait(page, fmt.Sprintf(`document.getElementById('main').dataset.page === %q && !!document.querySelector('#%s-body > :not(.state-loading):not(.state-error)')`, page, page))
		}
		if n := evaluate[int](b, `document.querySelectorAll('#tenants-body [role=meter]').length`); n < 4 {
			t.Errorf("tenants show %d quota bars", n)
		}
		b.do("open pools", chromedp.Click(chromedp.CSS(`a[href="#/ops/pools"]`)))
		b.wait("the sim pool's IP usage", `[...document.querySelectorAll('#pools-body [role=meter]')].some((m) => m.getAttribute('aria-valuenow') === '3')`)
		if rt := evaluate[string](b, `document.getElementById('pools-body').textContent`); !strings.Contains(rt, "fake") {
			t.Errorf("the pools page shows no runtime fake: %s", rt)
		}
		if hosts := evaluate[[]string](b, `[...document.querySelectorAll('#pools-body .pool-certified')].map((d) => d.textContent)`); len(hosts) == 0 || hosts[0] != "any" {
			t.Errorf("the hosted pools say their hosts are %q, want any (not certified only)", hosts)
		}
		b.do("open the audit log", chromedp.Click(chromedp.CSS(`nav a[href="#/audit"]`)))
		b.wait("the audit log, saying who acted", `[...document.querySelectorAll('#audit-table tr')].some((tr) =>
			tr.textContent.includes('instance.delete') && tr.textContent.includes('demo-member'))`)
	})

	step("the operator reads the doctor, as the API says", func(t *testing.T) {
		b := b.with(t)
		b.do("open the doctor", chromedp.Click(chromedp.CSS(`nav a[href="#/ops/doctor"]`)))
		b.wait("the doctor's findings", `document.getElementById('main').dataset.page === 'doctor' && !!document.querySelector('#doctor-body > :not(.state-loading):not(.state-error)')`)
		findings := dev.gql(t, dev.operator, `{ doctor { findings { code level } } }`, nil)["doctor"].(map[string]any)["findings"].([]any)
		var want []string
		for _, f := range findings {
			f := f.(map[string]any)
			want = append(want, f["code"].(string)+" "+strings.ToLower(f["level"].(string)))
			if f["level"] == "ERROR" {
				t.Errorf("dev has an error-level finding: %v", f)
			}
		}
		got := evaluate[[]string](b, `[...document.querySelectorAll('#doctor-body .finding')].map((f) => f.dataset.code + ' ' + f.dataset.level)`)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("the page shows findings %v, the API %v", got, want)
		}
		if len(want) == 0 && !evaluate[bool](b, `!!document.querySelector('#doctor-body .state-empty')`) {
			t.Errorf("no findings, but the page does not say so")
		}
		b.shot("doctor")
	})

	step("the operator gives a host a join token, shown once, and revokes its certificates", func(t *testing.T) {
		b := b.with(t)
		pick := dev.catalog(t)
		created := dev.gql(t, dev.operator, `mutation($p: ID!) { createHost(input: {poolId: $p, name: "hv-joining", bearerCredential: false}) { host { id } } }`,
			map[string]any{"p": pick("pools", "sim")})
		host := created["createHost"].(map[string]any)["host"].(map[string]any)["id"].(string)
		card := fmt.Sprintf(`document.querySelector('.host[data-id=%q] .host-cert')`, host)
		b.do("open hosts", chromedp.Click(chromedp.CSS(`a[href="#/ops/hosts"]`)))
		b.waitFor(15*time.Second, "the new host, with neither certificate nor credential, beside the simulated hosts on their bearer credentials",
			card+`?.dataset.certified === 'false' && `+card+`.textContent.includes('no bearer credential') &&
			[...document.querySelectorAll('#hosts-body .host-cert')].filter((c) => c.textContent.includes('by its bearer credential')).length === 2`)
		if evaluate[bool](b, fmt.Sprintf(`!!document.getElementById('revoke-%s')`, host)) {
			t.Error("a host without a certificate offers to revoke it")
		}

		b.do("ask for a join token", chromedp.Click(chromedp.ID("join-token-"+host)))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.wait("the token and its join command", `document.getElementById('once-dialog')?.open &&
			document.getElementById('once-command').value.startsWith('better-compute host --server https://')`)
		token := evaluate[string](b, `document.getElementById('once-token').value`)
		command := evaluate[string](b, `document.getElementById('once-command').value`)
		if !strings.HasPrefix(token, "bcj_") || !strings.Contains(command, "--join-token "+token+" ") {
			t.Fatalf("token %q, command %q", token, command)
		}
		b.do("copy the command", chromedp.Click(chromedp.ID("once-command-copy")))
		b.wait("the command copied, or selected to copy", `['true', 'selected'].includes(document.getElementById('once-command-copy').dataset.copied)`)
		b.do("dismiss it", chromedp.Click(chromedp.ID("once-done")))
		b.wait("the dialog gone, and the token with it", fmt.Sprintf(`!document.getElementById('once-dialog') && !document.documentElement.outerHTML.includes(%[1]q) &&
			![...document.querySelectorAll('input, textarea')].some((i) => i.value.includes(%[1]q))`, token))

		// The host runs the command as written (with the fake runtime).
		fields := strings.Fields(command)
		daemon := exec.Command(binary(t), append(fields[1:], "--runtime", "fake", "--state-dir", t.TempDir(), "--heartbeat", "500ms")...)
		var out bytes.Buffer
		daemon.Stdout, daemon.Stderr = &out, &out
		if err := daemon.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { daemon.Process.Signal(os.Interrupt); daemon.Wait() })
		b.waitFor(30*time.Second, "the host certified until its certificate expires", card+`?.dataset.certified === 'true' && `+card+`.textContent.includes('until') &&
			!!document.getElementById('revoke-`+host+`')`)

		b.do("revoke its certificates", chromedp.Click(chromedp.ID("revoke-"+host)))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.waitFor(15*time.Second, "the host no longer certified", card+`?.dataset.certified === 'false' && !document.getElementById('revoke-`+host+`')`)
		for _, x := range dev.gql(t, dev.operator, `{ hosts { id certified } }`, nil)["hosts"].([]any) {
			if x := x.(map[string]any); x["id"] == host && x["certified"] != false {
				t.Errorf("the API says host %s is still certified", host)
			}
		}
		if n := dev.auditCount(t, "host.revokeCertificates"); n != 1 {
			t.Errorf("%d revocations audited, want 1", n)
		}
	})

	step("the first load of a session is fast", func(t *testing.T) {
		b := b.with(t)
		// As the logged-in operator, with the cache off: index.html, the
		// assets, the viewer and the list.
		if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(b.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
			t.Fatal(err)
		}
		b.do("load the instances page", chromedp.Evaluate[chromedp.Void](`location.hash = '#/instances'`), chromedp.Reload())
		b.wait("the instances page", `document.documentElement.dataset.usable === 'instances'`)
		m := b.firstLoad()
		t.Logf("first load (logged in, instances list): %d files, %d bytes transferred, list rendered after %.0f ms", m.Files, m.Transfer, m.Usable)
		if m.Transfer > 300<<10 {
			t.Errorf("the first load transferred %d bytes, want under 300 KB", m.Transfer)
		}
	})

	b.noErrors()
}

// TestConsoleSandboxes drives the console's sandbox pages in headless
// Chromium against `better-compute dev --sim 2`, as a member whose
// template the test makes through the API: the templates page, the create
// form (an error caught in the browser, then a sandbox made), the sandbox
// page following its state live and counting its time down, extending it,
// pausing and resuming it, the list following changes made elsewhere, and
// deleting it. It saves screenshots of the three pages.
func TestConsoleSandboxes(t *testing.T) {
	sc := newSandboxConsole(t)
	dev, b, tpl, step := sc.dev, sc.b, sc.tpl, steps(t)
	pick := dev.catalog(t)
	// A template with a warm pool: the page shows its fill.
	dev.gql(t, dev.member, `mutation($in: CreateSandboxTemplateInput!) { createSandboxTemplate(input: $in) { sandboxTemplate { id } } }`,
		map[string]any{"in": map[string]any{"name": "node", "poolId": pick("pools", "sim"), "flavorId": pick("flavors", "small"),
			"imageId": pick("images", "debian-12"), "warmCount": 2}})
	sandbox := func(id string) map[string]any {
		return dev.gql(t, dev.member, `query($id: ID!) { sandbox(id: $id) { state expiresAt instance { desiredState } } }`,
			map[string]any{"id": id})["sandbox"].(map[string]any)
	}

	sc.open("#/templates")

	step("the templates page shows the template", func(t *testing.T) {
		b := b.with(t)
		b.wait("its card", fmt.Sprintf(`document.documentElement.dataset.ready === 'templates' && !!document.querySelector('.template[data-id=%q]')`, tpl))
		text := evaluate[string](b, fmt.Sprintf(`document.querySelector('.template[data-id=%q]').textContent`, tpl))
		for _, want := range []string{"python", "GREETING", "no internet; allow 10.77.0.1", "2 min by default, at most 10 min", "every sandbox boots cold"} {
			if !strings.Contains(text, want) {
				t.Errorf("the template's card lacks %q: %s", want, text)
			}
		}
		if strings.Contains(text, "hello") {
			t.Error("the template's card shows an env value")
		}
		// How full the pools are depends on the reconciler's pace: the
		// meter is checked for its target only.
		b.wait("the warm pools' meter", `document.querySelector('#warm-fill [role=meter]')?.getAttribute('aria-valuemax') === '2'`)
		t.Logf("warm pools: %s", evaluate[string](b, `document.getElementById('warm-detail').textContent`))
		b.shot("templates")
	})

	b.do("spy on requests", chromedp.Evaluate[chromedp.Void](`window.__sent = []; { const f = window.fetch;
		window.fetch = (url, opts) => { window.__sent.push(String(opts?.body || '')); return f(url, opts); }; }`))
	step("bad metadata is caught in the browser and nothing is sent", func(t *testing.T) {
		b := b.with(t)
		b.do("create from the template", chromedp.Click(chromedp.ID("new-from-"+tpl)))
		b.wait("the form, on the template, with its default timeout", fmt.Sprintf(`!!document.getElementById('sandbox-form') &&
			document.getElementById('f-template').value === %q && document.getElementById('f-timeout').value === '120'`, tpl))
		b.do("metadata without =", chromedp.SetValue(chromedp.ID("f-metadata"), "app=console\noops"), chromedp.Click(chromedp.ID("sandbox-submit")))
		b.wait("the metadata's error", `document.getElementById('f-metadata-error').textContent.includes('line 2') &&
			document.getElementById('f-metadata').getAttribute('aria-invalid') === 'true' && document.activeElement?.id === 'f-metadata'`)
		if sent := evaluate[[]string](b, `window.__sent.filter((s) => s.includes('createSandbox'))`); len(sent) != 0 {
			t.Errorf("the page sent createSandbox with bad metadata: %v", sent)
		}
	})

	var id string
	step("a sandbox is created and runs without a reload", func(t *testing.T) {
		b := b.with(t)
		b.do("fix the metadata and create", chromedp.SetValue(chromedp.ID("f-metadata"), "app=console\nowner=e2e"), chromedp.Click(chromedp.ID("sandbox-submit")))
		b.wait("the sandbox's page", `location.hash.startsWith('#/sandboxes/sbx_') && !!document.querySelector('#sandbox-state .badge')`)
		id = strings.TrimPrefix(evaluate[string](b, `location.hash`), "#/sandboxes/")
		start := time.Now()
		b.waitFor(60*time.Second, "the badge to say RUNNING", `document.querySelector('#sandbox-state .badge')?.dataset.state === 'RUNNING'`)
		t.Logf("sandbox %s RUNNING in the page %v after the create was answered", id, time.Since(start).Round(time.Millisecond))
		for sel, want := range map[string]string{"#sandbox-started": "COLD", "#sandbox-template": "python", "#sandbox-metadata": "owner = e2e"} {
			if got := evaluate[string](b, fmt.Sprintf(`document.querySelector(%q).textContent`, sel)); !strings.Contains(got, want) {
				t.Errorf("%s says %q, want %q in it", sel, got, want)
			}
		}
	})

	step("the time left counts down, and extending moves it", func(t *testing.T) {
		b := b.with(t)
		left := evaluate[int](b, `Number(document.querySelector('#sandbox-left .time-left').dataset.left)`)
		if left <= 0 || left > 120 {
			t.Fatalf("time left %d s, want (0, 120]", left)
		}
		b.wait("the countdown to move", fmt.Sprintf(`Number(document.querySelector('#sandbox-left .time-left').dataset.left) < %d`, left))
		before := sandbox(id)["expiresAt"].(string)
		b.do("set the timeout to 600 s", chromedp.SetValue(chromedp.ID("f-timeout"), "600"), chromedp.Click(chromedp.ID("timeout-submit")))
		b.wait("the time left near 10 min", `Number(document.querySelector('#sandbox-left .time-left').dataset.left) > 500 &&
			document.getElementById('timeout-done').textContent.startsWith('Done')`)
		if after := sandbox(id)["expiresAt"].(string); after <= before {
			t.Errorf("expiresAt %s, was %s: not extended", after, before)
		}
		b.do("over the maximum", chromedp.SetValue(chromedp.ID("f-timeout"), "601"), chromedp.Click(chromedp.ID("timeout-submit")))
		b.wait("the timeout's error", `document.getElementById('f-timeout-error').textContent.includes('600') &&
			document.getElementById('f-timeout').getAttribute('aria-invalid') === 'true'`)
	})

	step("pause and resume", func(t *testing.T) {
		b := b.with(t)
		b.do("pause", chromedp.Click(chromedp.ID("action-pause")))
		// The sandbox is PAUSED once its instance is, live.
		b.waitFor(60*time.Second, "PAUSED", `!!document.getElementById('action-resume') && !document.getElementById('action-pause') &&
			document.querySelector('#sandbox-state .badge').dataset.state === 'PAUSED' && !document.getElementById('sandbox-state').textContent.includes('→')`)
		if want := sandbox(id)["instance"].(map[string]any)["desiredState"]; want != "PAUSED" {
			t.Errorf("after pausing the instance's desired state is %v", want)
		}
		b.do("resume", chromedp.Click(chromedp.ID("action-resume")))
		b.waitFor(60*time.Second, "RUNNING again", `!!document.getElementById('action-pause') && document.querySelector('#sandbox-state .badge').dataset.state === 'RUNNING' &&
			!document.getElementById('sandbox-state').textContent.includes('→')`)
	})

	step("the history shows its steps in order, live", func(t *testing.T) {
		b := b.with(t)
		// The page was opened before the sandbox started: STARTED, PAUSED
		// and RESUMED came through the sandboxEvents subscription.
		history := `[...document.querySelectorAll('#sandbox-history li')].map((li) => li.dataset.type).join(' ')`
		// The timeout was set between STARTED and PAUSED.
		b.waitFor(30*time.Second, "CREATED STARTED TIMEOUT_CHANGED PAUSED RESUMED", history+` === 'CREATED STARTED TIMEOUT_CHANGED PAUSED RESUMED'`)
		t.Logf("history: %s", evaluate[string](b, history))
		versions := evaluate[[]int](b, `[...document.querySelectorAll('#sandbox-history li')].map((li) => Number(li.dataset.version))`)
		for i, v := range versions {
			if v != i+1 {
				t.Errorf("the history's versions are %v, want 1…%d in order", versions, len(versions))
				break
			}
		}
	})

	step("the CPU and memory plots draw its points", func(t *testing.T) {
		b := b.with(t)
		// The fake host synthesizes stats every few seconds and the server
		// writes them every 5 s (BC_SANDBOX_STATS_INTERVAL's default); the
		// page refreshes them every 5 s.
		for _, plot := range []string{"plot-cpu", "plot-memory"} {
			b.waitFor(60*time.Second, plot+" with a line of 2 points or more", fmt.Sprintf(`Number(document.getElementById(%q)?.dataset.points) >= 2 &&
				document.querySelector('#%s polyline')?.getAttribute('points').split(' ').length >= 2`, plot, plot))
			label := evaluate[string](b, fmt.Sprintf(`document.querySelector('#%s svg desc').textContent`, plot))
			if !strings.Contains(label, "latest") {
				t.Errorf("%s's text alternative says %q", plot, label)
			}
			t.Logf("%s: %s", plot, label)
		}
		b.shot("sandbox-plots")
	})

	step("the list follows changes made elsewhere", func(t *testing.T) {
		b := b.with(t)
		b.do("open the list", chromedp.Click(chromedp.CSS(`nav a[href="#/sandboxes"]`)))
		row := fmt.Sprintf(`document.querySelector('#sandboxes-table tr[data-id=%q]')`, id)
		b.wait("its row, RUNNING, with its time left", row+`?.querySelector('.badge').dataset.state === 'RUNNING' && Number(`+row+`.querySelector('.time-left').dataset.left) > 400`)
		other := dev.gql(t, dev.member, `mutation($t: ID!) { createSandbox(input: {templateId: $t, metadata: {app: "api"}}) { sandbox { id } } }`,
			map[string]any{"t": tpl})["createSandbox"].(map[string]any)["sandbox"].(map[string]any)["id"].(string)
		b.waitFor(60*time.Second, "the new sandbox's row, RUNNING", fmt.Sprintf(`document.querySelector('#sandboxes-table tr[data-id=%q] .badge')?.dataset.state === 'RUNNING'`, other))
		dev.gql(t, dev.member, `mutation($id: ID!) { pauseSandbox(input: {id: $id}) { sandbox { id } } }`, map[string]any{"id": other})
		b.wait("its row pausing", fmt.Sprintf(`!!document.querySelector('#sandboxes-table tr[data-id=%q]')?.textContent.match(/PAUSED/)`, other))
		b.shot("sandboxes")
		dev.gql(t, dev.member, `mutation($id: ID!) { deleteSandbox(input: {id: $id}) { sandbox { id } } }`, map[string]any{"id": other})
		b.waitFor(60*time.Second, "its row DELETED", fmt.Sprintf(`document.querySelector('#sandboxes-table tr[data-id=%q] .badge')?.dataset.state === 'DELETED'`, other))
	})

	step("delete with a confirmation", func(t *testing.T) {
		b := b.with(t)
		b.do("open the sandbox", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-id=%q] a`, id))))
		b.wait("the sandbox", `!!document.getElementById('action-delete') && document.querySelector('#sandbox-state .badge')?.dataset.state === 'RUNNING'`)
		b.shot("sandbox")
		b.do("delete", chromedp.Click(chromedp.ID("action-delete")))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.waitFor(60*time.Second, "the badge to say DELETED", `document.querySelector('#sandbox-state .badge')?.dataset.state === 'DELETED' &&
			!!document.getElementById('sandbox-ended') && !document.getElementById('action-delete') && document.getElementById('timeout-form').hidden`)
		if got := sandbox(id)["state"]; got != "DELETED" {
			t.Errorf("the API says the sandbox is %v", got)
		}
	})
	if !evaluate[bool](b, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded")
	}
	if n := evaluate[int](b, `[...document.querySelectorAll('main input, main select, main textarea')].filter((e) => e.labels.length === 0).length`); n != 0 {
		t.Errorf("%d controls of the sandbox page have no label", n)
	}
	b.noErrors()
}

// steps returns t.Run for steps that each build on the one before: the
// test stops at the first that fails.
func steps(t *testing.T) func(name string, f func(t *testing.T)) {
	return func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
}

// sandboxConsole is where the console's sandbox tests start: `dev --sim
// 2`, a browser saving screenshots, and the member's template python (the
// sim pool, small, debian-12, 2 min by default and at most 10).
type sandboxConsole struct {
	dev *devServer
	b   *browser
	tpl string
}

func newSandboxConsole(t *testing.T) *sandboxConsole {
	chrome := chromium(t)
	dev := startDev(t)
	b := newBrowser(t, chrome)
	b.shots = screenshotsDir(t)
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	pick := dev.catalog(t)
	tpl := dev.gql(t, dev.member, `mutation($in: CreateSandboxTemplateInput!) { createSandboxTemplate(input: $in) { sandboxTemplate { id } } }`,
		map[string]any{"in": map[string]any{
			"name": "python", "poolId": pick("pools", "sim"), "flavorId": pick("flavors", "small"), "imageId": pick("images", "debian-12"),
			"sshKeys": []string{sshKey}, "env": []map[string]any{{"name": "GREETING", "value": "hello"}},
			"network":        map[string]any{"allowInternetAccess": false, "allowOut": []string{"10.77.0.1"}},
			"defaultTimeout": 120, "maxTimeout": 600,
		}})["createSandboxTemplate"].(map[string]any)["sandboxTemplate"].(map[string]any)["id"].(string)
	return &sandboxConsole{dev: dev, b: b, tpl: tpl}
}

// open opens the console at hash and logs in as the member; the page is
// marked, so that window.__sameDocument says it was never reloaded.
func (sc *sandboxConsole) open(hash string) {
	b, dev := sc.b, sc.dev
	b.t.Helper()
	b.do("open the console", chromedp.Navigate(dev.url+"/"+hash))
	b.wait("the login form", `document.documentElement.dataset.usable === 'login'`)
	b.do("log in as the member", chromedp.SendKeys(chromedp.ID("login-token"), dev.member), chromedp.Click(chromedp.ID("login-submit")))
	b.wait("the live connection", `document.getElementById('conn')?.dataset.state === 'live'`)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
}

// checkKeysInBrowser runs the console's key checker on keys made here.
func checkKeysInBrowser(t *testing.T, b *browser) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	line := func(k any) string {
		pub, err := ssh.NewPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " someone@example"
	}
	rsaLine := line(&rsaKey.PublicKey)
	edBody := strings.Fields(sshKey)[1]
	raw, _ := base64.StdEncoding.DecodeString(edBody)
	cases := map[string]bool{
		sshKey:                                  true,
		rsaLine:                                 true,
		line(&ecKey.PublicKey):                  true,
		`from="10.0.0.1" ` + sshKey:             true,
		"ssh-rsa " + edBody:                     false, // the body is an ed25519 key
		"ssh-ed25519 " + edBody[:len(edBody)-8]: false, // truncated
		"ssh-ed25519 not*base64":                false,
		"ssh-ed25519":                           false,
		"ssh-dss AAAAB3NzaC1kc3MAAACBAP":        false,
		"-----BEGIN OPENSSH PRIVATE KEY-----":   false,
		"ecdsa-sha2-nistp256 " + strings.Fields(line(&ecKey.PublicKey))[1]:          false, // a P-384 key
		"ssh-ed25519 " + base64.StdEncoding.EncodeToString(append(raw, 0, 0, 0, 0)): false, // trailing bytes
	}
	for key, ok := range cases {
		arg, _ := json.Marshal(key)
		got := evaluate[string](b, fmt.Sprintf(`import('/js/sshkey.js').then((m) => m.checkKey(%s) || '')`, arg), chromedp.EvalAwaitPromise)
		if (got == "") != ok {
			t.Errorf("checkKey(%.60q) = %q, want ok=%v", key, got, ok)
		}
		// The API agrees.
		_, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key))
		if (err == nil) != ok {
			t.Errorf("the API's parser and the test disagree on %.60q: %v", key, err)
		}
	}
}

// chromium finds the browser; without one the test fails, loudly: CI
// installs Debian's chromium through scripts/services.sh.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("CHROMIUM NOT FOUND: the console tests need Debian's chromium (bash scripts/services.sh installs it as root; or set BC_CHROMIUM)")
	return ""
}

// browser is a headless Chromium tab at 1280x800.
type browser struct {
	t   *testing.T
	ctx context.Context
	log *consoleLog
	// shots is where shot saves pictures.
	shots string
}

// consoleLog keeps what the page wrote to its console.
type consoleLog struct {
	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// with returns the browser for a subtest.
func (b *browser) with(t *testing.T) *browser { c := *b; c.t = t; return &c }

func newBrowser(t *testing.T, path string) *browser {
	testenv.HostNetwork(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx, log: &consoleLog{}}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.log.mu.Lock()
			b.log.messages = append(b.log.messages, m)
			b.log.mu.Unlock()
		}
	}()
	return b
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

// wait waits, up to 15 s, for a JavaScript condition on the page.
func (b *browser) wait(what, cond string) {
	b.t.Helper()
	b.waitFor(15*time.Second, what, cond)
}

func (b *browser) waitFor(d time.Duration, what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(d))); err != nil {
		b.fail("wait for "+what, err)
	}
}

func evaluate[T any](b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}

// fail ends the test with what the page showed.
func (b *browser) fail(what string, err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText`))
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		p := filepath.Join(os.TempDir(), "console-failure-"+strings.NewReplacer("/", "-", " ", "_").Replace(b.t.Name())+".png")
		os.WriteFile(p, png, 0o644)
		b.t.Logf("screenshot of the failure: %s", p)
	}
	b.t.Fatalf("%s: %v\n--- page:\n%s\n--- console:\n%s", what, err, page, b.console())
}

func (b *browser) console() string {
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	var sb strings.Builder
	for _, m := range b.log.messages {
		fmt.Fprintf(&sb, "%s %s\n", m.Type, m.String())
	}
	return sb.String()
}

// noErrors fails on uncaught exceptions and refusals by the content
// security policy. Failed websocket connects while the server was down
// are expected.
func (b *browser) noErrors() {
	b.t.Helper()
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	for _, m := range b.log.messages {
		text := m.String()
		if m.IsException() || strings.Contains(text, "Content Security Policy") || strings.Contains(text, "Content-Security-Policy") {
			b.t.Errorf("the page logged: %s %s", m.Type, text)
		}
	}
}

// shot saves a screenshot of the viewport as <name>.png in b.shots.
func (b *browser) shot(name string) {
	b.t.Helper()
	// Wait until nothing moves: fonts loaded, two frames painted.
	b.do("settle", chromedp.Evaluate[chromedp.Void](`document.fonts.ready.then(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))))`, chromedp.EvalAwaitPromise))
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.fail("screenshot "+name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// load is what the browser measured of a page load: the document and the
// files it loaded (not the API's requests), and when it became usable (ms
// from the start of the navigation).
type load struct {
	Files                      int
	Transfer, Encoded, Decoded int
	Usable                     float64
}

func (b *browser) firstLoad() load {
	return evaluate[load](b, `(() => {
		const nav = performance.getEntriesByType('navigation')[0];
		const files = [nav, ...performance.getEntriesByType('resource').filter((r) => r.initiatorType !== 'fetch' && r.initiatorType !== 'xmlhttprequest')];
		const sum = (k) => files.reduce((a, r) => a + r[k], 0);
		return { Files: files.length, Transfer: sum('transferSize'), Encoded: sum('encodedBodySize'), Decoded: sum('decodedBodySize'),
			Usable: performance.getEntriesByName('bc-usable')[0].startTime };
	})()`)
}

// devServer is `better-compute dev --sim 2` with a state directory of its
// own; it can be stopped and started again on the same address.
type devServer struct {
	bin, stateDir    string
	env              []string // added to the test's environment
	addr, url        string
	operator, member string
	cmd              *exec.Cmd
	stderr           *bytes.Buffer
}

// startDev starts dev with env (NAME=value) added to the test's environment.
func startDev(t *testing.T, env ...string) *devServer {
	d := &devServer{bin: binary(t), stateDir: t.TempDir(), addr: "127.0.0.1:0", env: env}
	t.Cleanup(func() {
		d.stop(t)
		// dev made its own database on the local server, if one runs.
		if conn, err := pgx.Connect(context.Background(), devenv.LocalServer); err == nil {
			conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+devenv.SharedDatabase(d.stateDir))
			conn.Close(context.Background())
		}
	})
	d.start(t)
	return d
}

func (d *devServer) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(d.bin, "dev", "--sim", "2", "--listen", d.addr, "--state-dir", d.stateDir,
		"--hetzner-emulator", "127.0.0.1:0", "--proxmox-emulator", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "DATABASE_URL", "REDIS_URL", "BC_SECRET", "BC_BOOTSTRAP_TOKEN":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, d.env...)
	d.stderr = &bytes.Buffer{}
	cmd.Stderr = d.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd = cmd
	printed := make(chan map[string]string, 1)
	go func() {
		got := map[string]string{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
			value = strings.TrimSpace(value)
			switch {
			case ok && (key == "Console" || key == "Operator token"):
				got[key] = value
			case ok && key == "Member token":
				got[key], _, _ = strings.Cut(value, " ")
			}
			if len(got) == 3 {
				printed <- got
				break
			}
		}
		io.Copy(io.Discard, stdout) // dev writes nothing more, but must never block
	}()
	select {
	case got := <-printed:
		d.url = strings.TrimSuffix(got["Console"], "/")
		d.addr = strings.TrimPrefix(d.url, "http://") // the same address on a restart
		d.operator, d.member = got["Operator token"], got["Member token"]
	case <-time.After(30 * time.Second):
		t.Fatalf("dev printed no console URL and tokens within 30 s; stderr:\n%s", d.stderr.String())
	}
}

func (d *devServer) stop(t *testing.T) {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		d.cmd.Process.Kill()
		<-done
	}
	d.cmd = nil
}

func (d *devServer) gql(t *testing.T, token, query string, vars map[string]any) map[string]any {
	t.Helper()
	c := &cluster{t: t, url: d.url}
	data, errs := c.gql(token, query, vars)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", query, errs)
	}
	return data
}

// catalog reads the pools, flavors and images the member sees, and returns
// a lookup of one's ID by its list ("pools", "flavors", "images") and name.
func (d *devServer) catalog(t *testing.T) func(list, name string) string {
	t.Helper()
	data := d.gql(t, d.member, `{ pools { id name } flavors { id name } images { id name } }`, nil)
	return func(list, name string) string {
		t.Helper()
		for _, it := range data[list].([]any) {
			if it.(map[string]any)["name"] == name {
				return it.(map[string]any)["id"].(string)
			}
		}
		t.Fatalf("no %s %s", list, name)
		return ""
	}
}

// db connects to dev's database on the local server, as the test's
// own connection closed at its end.
func (d *devServer) db(t *testing.T) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(devenv.LocalServer)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = devenv.SharedDatabase(d.stateDir)
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("connect to dev's database: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// auditCount counts the audit events of action, as the operator sees them.
func (d *devServer) auditCount(t *testing.T, action string) int {
	t.Helper()
	data := d.gql(t, d.operator, `query($a: String) { auditEvents(first: 100, filter: {action: $a}) { totalCount } }`, map[string]any{"a": action})
	return int(data["auditEvents"].(map[string]any)["totalCount"].(float64))
}

// certifiedText is how the instance page starts to say what the API says
// of the certificate of an instance's host: "not certified", or
// "certified until" (and a time).
func certifiedText(t *testing.T, d *devServer, id string) string {
	t.Helper()
	data := d.gql(t, d.member, `query($id: ID!) { instance(id: $id) { hostCertified } }`, map[string]any{"id": id})
	if data["instance"].(map[string]any)["hostCertified"].(bool) {
		return "certified until"
	}
	return "not certified"
}
