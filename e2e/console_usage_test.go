package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/better-compute/vps/internal/testenv"
)

// usageMeasures are what the usage page plots, as UsageTotal names them.
var usageMeasures = []string{"vcpuHours", "memoryGibHours", "diskGibHours", "gpuHours"}

// TestConsoleUsage runs instances of two tenants on `dev --sim 2` metering
// usage every 2 s, for a few intervals (one of them stopped, so its disk
// bills without its vCPUs), deletes them and waits until their last
// interval is metered, so that the usage no longer changes. Then the usage
// page, as the member and as the operator, shows in its table and in its
// plots' bars exactly what the API's usage query returns for the range the
// page shows (the last 7 days), and its CSV download is the API's CSV.
func TestConsoleUsage(t *testing.T) {
	chrome := chromium(t)
	dev := startDev(t, "BC_USAGE_INTERVAL=2s", "BC_USAGE_SETTLE=200ms")
	b := newBrowser(t, chrome)
	b.shots = screenshotsDir(t)
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	step := steps(t)
	db := dev.db(t)
	pick := dev.catalog(t)
	acme := dev.gql(t, dev.operator, `mutation { createTenant(input: {name: "acme"}) { tenant { id } } }`, nil)["createTenant"].(map[string]any)["tenant"].(map[string]any)["id"].(string)
	acmeToken := dev.gql(t, dev.operator, `mutation($t: ID) { createApiToken(input: {name: "acme", tenantId: $t}) { token } }`,
		map[string]any{"t": acme})["createApiToken"].(map[string]any)["token"].(string)

	type owned struct{ id, token string }
	var insts []owned
	for i, token := range []string{dev.member, dev.member, acmeToken} {
		data := dev.gql(t, token, `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`,
			map[string]any{"in": map[string]any{"poolId": pick("pools", "sim"), "flavorId": pick("flavors", "small"), "imageId": pick("images", "debian-12"),
				"name": fmt.Sprintf("metered-%d", i), "sshKeys": []string{sshKey}}})
		insts = append(insts, owned{data["createInstance"].(map[string]any)["instance"].(map[string]any)["id"].(string), token})
	}
	state := func(in owned) string {
		data := dev.gql(t, in.token, `query($id: ID!) { instance(id: $id) { state } }`, map[string]any{"id": in.id})
		if data["instance"] == nil {
			return "DELETED"
		}
		return data["instance"].(map[string]any)["state"].(string)
	}
	waitState := func(in owned, want string) {
		testenv.Eventually(t, 60*time.Second, in.id+" "+want, func() bool { return state(in) == want })
	}
	for _, in := range insts {
		waitState(in, "RUNNING")
	}
	dev.gql(t, dev.member, `mutation($id: ID!) { stopInstance(input: {id: $id}) { instance { id } } }`, map[string]any{"id": insts[1].id})
	waitState(insts[1], "STOPPED")
	meteredPast := func(at time.Time) {
		testenv.Eventually(t, time.Until(at)+30*time.Second, "usage metered past "+at.String(), func() bool {
			var n int
			if err := db.QueryRow(context.Background(), `SELECT count(*) FROM usage_meter WHERE metered_until > $1`, at).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n == 1
		})
	}
	meteredPast(time.Now().Add(6 * time.Second)) // three intervals with the stopped one
	for _, in := range insts {
		dev.gql(t, in.token, `mutation($id: ID!) { deleteInstance(input: {id: $id}) { instance { id } } }`, map[string]any{"id": in.id})
	}
	for _, in := range insts {
		waitState(in, "DELETED")
	}
	var deletedAt time.Time
	if err := db.QueryRow(context.Background(), `SELECT max(at) FROM instance_state_history WHERE to_state = 'DELETED'`).Scan(&deletedAt); err != nil {
		t.Fatal(err)
	}
	meteredPast(deletedAt) // nothing more is metered: the usage is final

	downloads := t.TempDir()
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads,
	}); err != nil {
		t.Fatal(err)
	}

	step("the member sees its tenant's usage by day, as the API says", func(t *testing.T) {
		b := b.with(t)
		b.do("open the usage page", chromedp.Navigate(dev.url+"/#/usage"))
		b.wait("the login form", `document.documentElement.dataset.usable === 'login'`)
		b.do("log in as the member", chromedp.SendKeys(chromedp.ID("login-token"), dev.member), chromedp.Click(chromedp.ID("login-submit")))
		from, to := usagePageShown(b)
		api := usageTotals(t, dev, dev.member, from, to, "DAY")
		var vcpuHours float64
		for _, m := range api {
			vcpuHours += m["vcpuHours"]
		}
		if vcpuHours == 0 {
			t.Fatalf("the API has no vCPU-hours for the member: %v", api)
		}
		checkUsagePage(t, b, api, false)
		b.shot("usage")

		b.do("download the CSV", chromedp.Click(chromedp.ID("usage-csv")))
		b.wait("the download", `document.getElementById('usage-status').textContent.startsWith('Downloaded')`)
		name := filepath.Join(downloads, fmt.Sprintf("usage-%s-%s.csv", from[:10], usageLastDay(t, to)))
		var got []byte
		testenv.Eventually(t, 10*time.Second, "the file "+name, func() bool {
			var err error
			got, err = os.ReadFile(name)
			return err == nil && len(got) > 0
		})
		if want := usageCSV(t, dev, dev.member, from, to, "DAY"); string(got) != want {
			t.Errorf("the page's CSV:\n%s\nthe API's:\n%s", got, want)
		}

		// A range ending before it starts is refused at its field, unsent.
		b.do("ask for a range backwards", chromedp.Evaluate[chromedp.Void](`document.getElementById('f-from').value = '2026-03-02'; document.getElementById('f-to').value = '2026-03-01'`),
			chromedp.Click(chromedp.ID("usage-show")))
		b.wait("the error at To", `document.getElementById('f-to-error').textContent === 'is before the first day' &&
			document.getElementById('f-to').getAttribute('aria-invalid') === 'true' && !location.hash.includes('2026-03')`)
	})

	step("the operator sees every tenant's usage by tenant and day, as the API says", func(t *testing.T) {
		b := b.with(t)
		b.do("log out", chromedp.Click(chromedp.ID("logout")))
		b.wait("the login form", `!!document.getElementById('login-token')`)
		b.do("log in as the operator", chromedp.SendKeys(chromedp.ID("login-token"), dev.operator), chromedp.Click(chromedp.ID("login-submit")))
		from, to := usagePageShown(b)
		api := usageTotals(t, dev, dev.operator, from, to, "TENANT", "DAY")
		tenants := map[string]bool{}
		for k := range api {
			tenants[strings.Split(k, "|")[0]] = true
		}
		if len(tenants) < 2 || !tenants[acme] {
			t.Fatalf("the API's usage names tenants %v, want the demo tenant's and acme's (%s)", tenants, acme)
		}
		checkUsagePage(t, b, api, true)
		if n := evaluate[int](b, `document.querySelectorAll('#plot-vcpuHours .plot-legend li').length`); n != len(tenants) {
			t.Errorf("the vCPU plot's legend has %d tenants, want %d", n, len(tenants))
		}
		b.shot("usage-operator")
	})
	b.noErrors()
}

// usagePageShown waits for the usage page's totals and returns the range
// it shows, as the API's times.
func usagePageShown(b *browser) (from, to string) {
	b.t.Helper()
	b.wait("the usage page", `document.documentElement.dataset.ready === 'usage-body' && !!document.querySelector('#usage-body table')`)
	r := evaluate[[]string](b, `[document.getElementById('usage-body').dataset.from, document.getElementById('usage-body').dataset.to]`)
	return r[0], r[1]
}

// usageLastDay is the last day a range's end includes.
func usageLastDay(t *testing.T, to string) string {
	end, err := time.Parse(time.RFC3339, to)
	if err != nil {
		t.Fatal(err)
	}
	return end.Add(-24 * time.Hour).Format(time.DateOnly)
}

// usageTotals runs the usage query and keys its totals by "tenant|day"
// (the tenant empty when not grouped by it).
func usageTotals(t *testing.T, dev *devServer, token, from, to string, groupBy ...string) map[string]map[string]float64 {
	t.Helper()
	data := dev.gql(t, token, `query($f: DateTime!, $t: DateTime!, $g: [UsageGroup!]) { usage(from: $f, to: $t, groupBy: $g) {
		tenantId day vcpuHours memoryGibHours diskGibHours gpuHours } }`, map[string]any{"f": from, "t": to, "g": groupBy})
	out := map[string]map[string]float64{}
	for _, it := range data["usage"].([]any) {
		u := it.(map[string]any)
		tenant, _ := u["tenantId"].(string)
		m := map[string]float64{}
		for _, k := range usageMeasures {
			m[k] = u[k].(float64)
		}
		out[tenant+"|"+u["day"].(string)[:10]] = m
	}
	return out
}

// usageCSV is GET /usage.csv for the range, with the token.
func usageCSV(t *testing.T, dev *devServer, token, from, to string, groupBy ...string) string {
	t.Helper()
	q := url.Values{"from": {from}, "to": {to}, "groupBy": {strings.Join(groupBy, ",")}}
	req, _ := http.NewRequest(http.MethodGet, dev.url+"/usage.csv?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /usage.csv: %s: %s", resp.Status, body)
	}
	return string(body)
}

// checkUsagePage compares the page's table and its plots' bars with the
// API's totals: the same keys, the same exact numbers.
func checkUsagePage(t *testing.T, b *browser, api map[string]map[string]float64, byTenant bool) {
	t.Helper()
	type cell struct{ Key, Measure, Value string }
	table := evaluate[[]cell](b, `[...document.querySelectorAll('#usage-body tbody tr')].flatMap((tr) =>
		[...tr.querySelectorAll('[data-measure]')].map((c) => ({ Key: tr.dataset.tenant + '|' + tr.dataset.day, Measure: c.dataset.measure, Value: c.dataset.value })))`)
	bars := evaluate[[]cell](b, `[...document.querySelectorAll('#usage-body figure')].flatMap((f) =>
		[...f.querySelectorAll('rect.plot-bar')].map((r) => ({ Key: r.dataset.series + '|' + r.dataset.day, Measure: f.id.replace('plot-', ''), Value: r.dataset.value })))`)
	read := func(what string, cells []cell) map[string]map[string]float64 {
		got := map[string]map[string]float64{}
		for _, c := range cells {
			v, err := strconv.ParseFloat(c.Value, 64)
			if err != nil {
				t.Fatalf("the %s show %q for %s %s", what, c.Value, c.Key, c.Measure)
			}
			key := c.Key
			if !byTenant {
				key = "|" + strings.SplitN(key, "|", 2)[1]
			}
			if got[key] == nil {
				got[key] = map[string]float64{}
			}
			got[key][c.Measure] = v
		}
		return got
	}
	tableGot := read("table", table)
	for key, want := range api {
		for _, m := range usageMeasures {
			if tableGot[key][m] != want[m] {
				t.Errorf("the table shows %s %s = %v, the API %v", key, m, tableGot[key][m], want[m])
			}
		}
	}
	if len(tableGot) != len(api) {
		t.Errorf("the table has %d rows, the API %d totals", len(tableGot), len(api))
	}
	// A bar is drawn for every nonzero number, none for a zero.
	barsGot := read("bars", bars)
	for key, want := range api {
		for _, m := range usageMeasures {
			if barsGot[key][m] != want[m] {
				t.Errorf("the %s plot's bar for %s is %v, the API says %v", m, key, barsGot[key][m], want[m])
			}
		}
	}
	for key := range barsGot {
		if api[key] == nil {
			t.Errorf("the plots have a bar for %s, which the API has no total for", key)
		}
	}
	if n := evaluate[int](b, `[...document.querySelectorAll('rect.plot-bar')].filter((r) => !r.querySelector('title')?.textContent).length`); n != 0 {
		t.Errorf("%d bars say nothing on hover", n)
	}
}
