package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestExplorer: a browser's GET of /graphql gets the API explorer, under
// the console's content security policy, while an API client's GET still
// gets the API; in headless Chromium the explorer refuses a wrong token,
// loads the schema by introspection with the member's token typed into
// the page, and runs a query with it.
func TestExplorer(t *testing.T) {
	chrome := chromium(t)
	dev := startDev(t)
	step := steps(t)

	get := func(accept string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", dev.url+"/graphql", nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	step("a browser gets the explorer, under the console's policy", func(t *testing.T) {
		resp, body := get("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		console, _ := get("text/html")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "API explorer") {
			t.Fatalf("%d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || csp != console.Header.Get("Content-Security-Policy") {
			t.Fatalf("policy %q", csp)
		}
	})
	step("an API client's GET still gets the API", func(t *testing.T) {
		resp, body := get("application/json")
		if resp.StatusCode == 200 || !strings.Contains(body, `"errors"`) {
			t.Fatalf("%d: %.200s", resp.StatusCode, body)
		}
	})
	step("introspection answers a token, and nobody else", func(t *testing.T) {
		data := dev.gql(t, dev.member, `{ __schema { queryType { name } } }`, nil)
		if data["__schema"].(map[string]any)["queryType"].(map[string]any)["name"] != "Query" {
			t.Fatalf("introspection: %v", data)
		}
		if _, errs, err := post(dev.url, "", `{ __schema { queryType { name } } }`, nil); err != nil || len(errs) == 0 {
			t.Fatalf("introspection without a token: %v %v", errs, err)
		}
	})

	b := newBrowser(t, chrome)
	b.do("open the explorer", chromedp.Navigate(dev.url+"/graphql"))
	b.wait("the explorer", `document.documentElement.dataset.usable === 'explorer'`)
	step("a wrong token is refused", func(t *testing.T) {
		b := b.with(t)
		b.do("use a wrong token", chromedp.SendKeys(chromedp.ID("ex-token"), "bct_nope"), chromedp.Click(chromedp.ID("ex-use")))
		b.wait("the refusal", `document.documentElement.dataset.schema === 'refused' && document.getElementById('ex-auth-status').textContent.startsWith('Refused')`)
	})
	step("the member's token loads the schema", func(t *testing.T) {
		b := b.with(t)
		b.do("use the member's token", chromedp.Evaluate[chromedp.Void](`document.getElementById('ex-token').value = ''`),
			chromedp.SendKeys(chromedp.ID("ex-token"), dev.member), chromedp.Click(chromedp.ID("ex-use")))
		b.wait("the schema", `document.documentElement.dataset.schema === 'loaded' && document.getElementById('ex-schema').textContent.includes('createInstance')`)
		b.do("open a type", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#ex-schema button')].find((x) => x.textContent === 'InstanceConnection').click()`))
		b.wait("the type's fields", `document.getElementById('ex-schema').textContent.includes('pageInfo') && document.getElementById('ex-crumbs').textContent.includes('InstanceConnection')`)
	})
	step("a query runs with the token", func(t *testing.T) {
		b := b.with(t)
		b.do("run the query", chromedp.Click(chromedp.ID("ex-run")))
		b.wait("its result", `document.documentElement.dataset.ran === '1' && document.getElementById('ex-result').textContent.includes('"demo-member"')`)
		if href := evaluate[string](b, `location.href`); strings.Contains(href, dev.member) || strings.Contains(href, "token") {
			t.Errorf("the token is in the URL: %s", href)
		}
		b.noErrors()
	})
}
