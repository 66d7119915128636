package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, target string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.Host = "console.example:8080"
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, req)
	return w.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIndex(t *testing.T) {
	for _, p := range []string{"/", "/instances", "/ops/hosts"} {
		r := get(t, p)
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("%s: %d %s", p, r.StatusCode, r.Header.Get("Content-Type"))
		}
		if got := r.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("%s: Cache-Control %q, want no-cache", p, got)
		}
		csp := r.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self';", "style-src 'self';", "connect-src 'self' ws://console.example:8080 wss://console.example:8080;", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("CSP allows something unsafe: %s", csp)
		}
		html := body(t, r)
		if !strings.Contains(html, `src="/js/app.js?v=`+Version()+`"`) {
			t.Errorf("index.html does not load the versioned app.js:\n%s", html)
		}
		// Nothing inline: the policy would refuse it.
		if regexp.MustCompile(`<script(?:[^>]*)>[^<\s]`).MatchString(html) || strings.Contains(html, "style=") || regexp.MustCompile(`\son[a-z]+=`).MatchString(html) {
			t.Errorf("index.html has inline script or style")
		}
	}
}

// TestAssets checks every file: its type, its caching, and that each
// relative import names a file that is served, with the version.
func TestAssets(t *testing.T) {
	s := load()
	total, totalGz := 0, 0
	imp := regexp.MustCompile(`(?:from|import)\s*\(?\s*["'](\.{1,2}/[^"']+)["']`)
	for name, a := range s.assets {
		total += len(a.body)
		if a.gz != nil {
			totalGz += len(a.gz)
		} else {
			totalGz += len(a.body)
		}
		if name == "/index.html" {
			continue
		}
		r := get(t, name+"?v="+s.version)
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != a.ctype {
			t.Errorf("%s: %d %q", name, r.StatusCode, r.Header.Get("Content-Type"))
		}
		if got := r.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("%s versioned: Cache-Control %q", name, got)
		}
		if got := get(t, name).Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("%s unversioned: Cache-Control %q", name, got)
		}
		if get(t, name).Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", name)
		}
		if path.Ext(name) != ".js" {
			continue
		}
		src := string(a.body)
		for _, m := range imp.FindAllStringSubmatch(src, -1) {
			spec := m[1]
			file, v, ok := strings.Cut(spec, "?v=")
			if !ok || v != s.version {
				t.Errorf("%s imports %s without the version", name, spec)
			}
			target := path.Join(path.Dir(name), file)
			if s.assets[target] == nil {
				t.Errorf("%s imports %s, which is not served", name, target)
			}
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(src, bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
	t.Logf("%d files, %d bytes, %d gzipped", len(s.assets), total, totalGz)
	if totalGz > 300<<10 {
		t.Errorf("the console is %d bytes gzipped, over the 300 KB budget", totalGz)
	}
}

func TestConditionalAndGzip(t *testing.T) {
	r := get(t, "/js/app.js", "Accept-Encoding", "gzip, br")
	if r.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", r.Header)
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, load().assets["/js/app.js"].body) {
		t.Fatal("gzipped body differs")
	}
	if r := get(t, "/js/app.js", "Accept-Encoding", "gzip;q=0"); r.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzip sent though refused")
	}
	etag := r.Header.Get("ETag")
	if r := get(t, "/js/app.js", "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", r.StatusCode)
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	if r := get(t, "/nope.js"); r.StatusCode != 404 || r.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("/nope.js: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, httptest.NewRequest("POST", "/", strings.NewReader("x")))
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /: %d", w.Code)
	}
	// A hostile Host header cannot widen the policy.
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = "evil.example; script-src *"
	w = httptest.NewRecorder()
	Handler().ServeHTTP(w, req)
	if csp := w.Header().Get("Content-Security-Policy"); strings.Contains(csp, "evil") || !strings.Contains(csp, "connect-src 'self';") {
		t.Fatalf("CSP with a bad Host: %s", csp)
	}
}
