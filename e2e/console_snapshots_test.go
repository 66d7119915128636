package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/better-compute/vps/internal/testenv"
)

// TestConsoleSnapshots drives the sandbox page's snapshots in headless
// Chromium against `better-compute dev --sim 2`, as the member: a name
// caught in the browser, then a snapshot of a RUNNING sandbox taken by
// name, shown PENDING and then READY without a reload, with the size and
// sha256 the API has; a sandbox created from it, which runs on the host
// holding it; and its deletion, after which the API does not find it and
// its host purges its file. It saves a screenshot of the section.
func TestConsoleSnapshots(t *testing.T) {
	sc := newSandboxConsole(t)
	dev, b, step := sc.dev, sc.b, steps(t)
	db := dev.db(t)
	src := dev.gql(t, dev.member, `mutation($t: ID!) { createSandbox(input: {templateId: $t}) { sandbox { id } } }`,
		map[string]any{"t": sc.tpl})["createSandbox"].(map[string]any)["sandbox"].(map[string]any)["id"].(string)
	sc.open("#/sandboxes/" + src)
	b.waitFor(60*time.Second, "the sandbox RUNNING, with no snapshots and the form to take one", `document.querySelector('#sandbox-state .badge')?.dataset.state === 'RUNNING' &&
		!document.getElementById('snapshot-form').hidden && document.getElementById('h-snapshots').parentElement.textContent.includes('No snapshots yet.')`)
	b.do("spy on requests", chromedp.Evaluate[chromedp.Void](`window.__sent = []; { const f = window.fetch;
		window.fetch = (url, opts) => { window.__sent.push(String(opts?.body || '')); return f(url, opts); }; }`))

	step("a bad name is caught in the browser and nothing is sent", func(t *testing.T) {
		b := b.with(t)
		b.do("a name with capitals", chromedp.SendKeys(chromedp.ID("f-name"), "Deps!"), chromedp.Click(chromedp.ID("snapshot-submit")))
		b.wait("the name's error", `document.getElementById('f-name-error').textContent.includes('lowercase') &&
			document.getElementById('f-name').getAttribute('aria-invalid') === 'true' && document.activeElement?.id === 'f-name'`)
		if sent := evaluate[[]string](b, `window.__sent.filter((s) => s.includes('createSandboxSnapshot'))`); len(sent) != 0 {
			t.Errorf("the page sent createSandboxSnapshot with a bad name: %v", sent)
		}
	})

	var snap, host string
	step("a snapshot is taken, PENDING then READY without a reload", func(t *testing.T) {
		b := b.with(t)
		// Every state the list shows the snapshot in, with whether it can
		// be restored from then.
		b.do("watch the list", chromedp.Evaluate[chromedp.Void](`window.__snapStates = [];
			new MutationObserver(() => {
				const li = document.querySelector('#sandbox-snapshots li');
				if (!li) return;
				const seen = li.dataset.state + (li.querySelector('[id^=snapshot-restore-]').disabled ? ' (restore disabled)' : '');
				if (window.__snapStates.at(-1) !== seen) window.__snapStates.push(seen);
			}).observe(document.getElementById('sandbox-snapshots'), { childList: true })`))
		b.do("take it", chromedp.SetValue(chromedp.ID("f-name"), "deps"), chromedp.Click(chromedp.ID("snapshot-submit")))
		b.wait("it in the list", `document.querySelector('#sandbox-snapshots li strong')?.textContent === 'deps' &&
			document.getElementById('f-name').value === '' && document.getElementById('f-name-error').textContent === ''`)
		snap = evaluate[string](b, `document.querySelector('#sandbox-snapshots li').dataset.id`)
		b.waitFor(30*time.Second, "it READY", `document.querySelector('#sandbox-snapshots li')?.dataset.state === 'READY'`)
		if got := evaluate[[]string](b, `window.__snapStates`); strings.Join(got, ", ") != "PENDING (restore disabled), READY" {
			t.Errorf("the list showed it %q, want PENDING (restore disabled), then READY", got)
		}
		api := dev.gql(t, dev.member, `query($id: ID!) { sandboxSnapshot(id: $id) { state sizeBytes sha256 createdAt settledAt } }`,
			map[string]any{"id": snap})["sandboxSnapshot"].(map[string]any)
		t.Logf("snapshot %s PENDING from %v to %v", snap, api["createdAt"], api["settledAt"])
		size, sha := int64(api["sizeBytes"].(float64)), api["sha256"].(string)
		if api["state"] != "READY" || size <= 0 || !sha256Hex.MatchString(sha) {
			t.Fatalf("the API says %v, want READY with a size and a sha256", api)
		}
		shown := evaluate[map[string]string](b, `(() => { const li = document.querySelector('#sandbox-snapshots li');
			const size = li.querySelector('.snapshot-size'), sha = li.querySelector('.snapshot-sha256');
			return { size: size.textContent, sizeTitle: size.title, sha: sha.textContent, shaTitle: sha.title }; })()`)
		want := map[string]string{"size": shortBytes(size), "sizeTitle": fmt.Sprintf("%d bytes", size), "sha": sha[:12] + "…", "shaTitle": sha}
		for k, v := range want {
			if shown[k] != v {
				t.Errorf("the page shows %s %q, want %q (the API's)", k, shown[k], v)
			}
		}
		if err := db.QueryRow(t.Context(), `SELECT h.name FROM sandbox_snapshots s JOIN hosts h ON h.id = s.host_id WHERE s.id = $1`,
			decode(t, "snp", snap)).Scan(&host); err != nil {
			t.Fatalf("the snapshot's host: %v", err)
		}
		if !storeHas(t, filepath.Join(dev.stateDir, "hosts", host), snap) {
			t.Errorf("host %s's store has no file of %s", host, snap)
		}
		if !evaluate[bool](b, `window.__sameDocument === true`) {
			t.Fatal("the page was reloaded")
		}
		b.do("show the snapshots", chromedp.Evaluate[chromedp.Void](`document.getElementById('h-snapshots').scrollIntoView()`))
		b.shot("sandbox-snapshots")
	})

	var restored string
	step("a sandbox is created from it and runs on its host", func(t *testing.T) {
		b := b.with(t)
		b.do("create a sandbox from it", chromedp.Click(chromedp.ID("snapshot-restore-"+snap)))
		b.wait("the new sandbox's page", fmt.Sprintf(`location.hash.startsWith('#/sandboxes/sbx_') && location.hash !== '#/sandboxes/%s' &&
			!!document.querySelector('#sandbox-state .badge')`, src))
		restored = strings.TrimPrefix(evaluate[string](b, `location.hash`), "#/sandboxes/")
		b.waitFor(60*time.Second, "it RUNNING, restored from deps", `document.querySelector('#sandbox-state .badge')?.dataset.state === 'RUNNING' &&
			document.getElementById('sandbox-started').textContent.includes('restored from snapshot deps')`)
		got := dev.gql(t, dev.member, `query($id: ID!) { sandbox(id: $id) { fromSnapshot { id } } }`,
			map[string]any{"id": restored})["sandbox"].(map[string]any)
		if from, _ := got["fromSnapshot"].(map[string]any); from == nil || from["id"] != snap {
			t.Errorf("the API says the sandbox is from %v, want %s", got["fromSnapshot"], snap)
		}
		inst := dev.gql(t, dev.operator, `query($id: ID!) { sandbox(id: $id) { instance { host { name } } } }`,
			map[string]any{"id": restored})["sandbox"].(map[string]any)["instance"].(map[string]any)
		if on, _ := inst["host"].(map[string]any); on == nil || on["name"] != host {
			t.Errorf("its instance runs on %v, want the snapshot's host %s", inst["host"], host)
		}
		if !evaluate[bool](b, `window.__sameDocument === true`) {
			t.Fatal("the page was reloaded")
		}
	})

	step("deleting it purges it from its host", func(t *testing.T) {
		b := b.with(t)
		b.do("back to the source sandbox", chromedp.NavigateBack())
		b.wait("its snapshot, READY", fmt.Sprintf(`location.hash === '#/sandboxes/%s' && document.querySelector('#sandbox-snapshots li')?.dataset.state === 'READY'`, src))
		b.do("delete it", chromedp.Click(chromedp.ID("snapshot-delete-"+snap)))
		b.wait("the confirmation", `document.getElementById('confirm-dialog')?.open && document.activeElement?.id === 'confirm-cancel'`)
		b.do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		b.wait("it gone from the list", `!document.querySelector('#sandbox-snapshots li') &&
			document.getElementById('h-snapshots').parentElement.textContent.includes('No snapshots yet.')`)
		_, errs := (&cluster{t: t, url: dev.url}).gql(dev.member, `query($id: ID!) { sandboxSnapshot(id: $id) { id } }`, map[string]any{"id": snap})
		if len(errs) != 1 || errs[0]["extensions"].(map[string]any)["code"] != "NOT_FOUND" {
			t.Errorf("sandboxSnapshot of the deleted snapshot: %v, want NOT_FOUND", errs)
		}
		testenv.Eventually(t, 30*time.Second, "the snapshot purged", func() bool {
			var purged bool
			db.QueryRow(t.Context(), `SELECT purged FROM sandbox_snapshots WHERE id = $1`, decode(t, "snp", snap)).Scan(&purged)
			return purged
		})
		if storeHas(t, filepath.Join(dev.stateDir, "hosts", host), snap) {
			t.Errorf("the purged snapshot's file is still on %s", host)
		}
		// Sandboxes made from it live on.
		if got := dev.gql(t, dev.member, `query($id: ID!) { sandbox(id: $id) { state } }`, map[string]any{"id": restored})["sandbox"].(map[string]any)["state"]; got != "RUNNING" {
			t.Errorf("the restored sandbox is %v after its snapshot was deleted", got)
		}
	})
	if !evaluate[bool](b, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded")
	}
	b.noErrors()
}

// shortBytes is a size as the console's snapshots show it (bytes in
// sandbox-snapshots.js): whole bytes, else one decimal of the largest
// binary unit under it.
func shortBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
