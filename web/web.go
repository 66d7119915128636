// Package web is the console: static HTML, CSS and JavaScript modules,
// embedded into the binary and served at /. There is no build step; the
// files under static/ are what the browser runs.
//
// At start the handler versions the assets: it appends ?v=<digest of every
// file> to the asset URLs in index.html and to the relative imports of the
// modules, so a versioned asset may be cached for good while index.html is
// revalidated on every load.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// asset is one file as served.
type asset struct {
	body  []byte
	gz    []byte // nil when compressing does not pay
	ctype string
	etag  string
}

type site struct {
	version string
	assets  map[string]*asset // by URL path
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

var (
	// Relative module specifiers: import … from "./x.js", import("./x.js").
	jsImport = regexp.MustCompile(`((?:from|import)\s*\(?\s*)(["'])(\.{1,2}/[^"'?]+\.js)(["'])`)
	// Root-relative asset URLs in index.html.
	htmlAsset = regexp.MustCompile(`((?:src|href)=")(/[^"?]+\.(?:js|css|svg|png))"`)
)

var load = sync.OnceValue(func() *site {
	files := map[string][]byte{}
	var names []string
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static")
		files[name] = b
		names = append(names, name)
		return nil
	})
	if err != nil {
		panic("web: read embedded files: " + err.Error())
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(files[n])
	}
	s := &site{version: hex.EncodeToString(h.Sum(nil))[:12], assets: map[string]*asset{}}
	for _, n := range names {
		b := files[n]
		switch path.Ext(n) {
		case ".js":
			b = jsImport.ReplaceAll(b, []byte(`${1}${2}${3}?v=`+s.version+`${4}`))
		case ".html":
			b = htmlAsset.ReplaceAll(b, []byte(`${1}${2}?v=`+s.version+`"`))
		}
		sum := sha256.Sum256(b)
		a := &asset{body: b, ctype: contentTypes[path.Ext(n)], etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		if a.ctype == "" {
			a.ctype = "application/octet-stream"
		}
		if strings.HasPrefix(a.ctype, "text/") || a.ctype == "image/svg+xml" || a.ctype == "application/json" {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			zw.Write(b)
			zw.Close()
			if buf.Len() < len(b)*9/10 {
				a.gz = buf.Bytes()
			}
		}
		s.assets[n] = a
	}
	if s.assets["/index.html"] == nil {
		panic("web: no index.html")
	}
	return s
})

// Version is the digest the assets are versioned with.
func Version() string { return load().version }

// Handler serves the console: index.html at / (and at any path that names
// no file, as the console routes with the URL's fragment), the assets
// beside it.
func Handler() http.Handler {
	s := load()
	return http.HandlerFunc(s.serve)
}

// Explorer serves the API explorer page (explorer.html), under the
// console's headers: the server answers a browser's GET of /graphql with
// it.
func Explorer() http.Handler {
	s := load()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.file(w, r, "/explorer.html") })
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/" {
		p = "/index.html"
	}
	s.file(w, r, p)
}

// file answers with the asset at p, or with index.html when p names no
// file (a client route).
func (s *site) file(w http.ResponseWriter, r *http.Request, p string) {
	hdr := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	a, ok := s.assets[p]
	immutable := ok && p != "/index.html" && r.URL.Query().Get("v") == s.version
	if !ok {
		if path.Ext(p) != "" {
			hdr.Set("Content-Type", "text/plain; charset=utf-8")
			hdr.Set("X-Content-Type-Options", "nosniff")
			hdr.Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("not found\n"))
			return
		}
		a = s.assets["/index.html"] // a client route
	}
	hdr.Set("Content-Type", a.ctype)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Content-Security-Policy", csp(r.Host))
	hdr.Set("ETag", a.etag)
	hdr.Set("Vary", "Accept-Encoding")
	if immutable {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hdr.Set("Cache-Control", "no-cache")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatch(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hdr.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

// csp allows the console's own files and, for live updates, websockets to
// the host it was loaded from; nothing inline, nothing from elsewhere.
func csp(host string) string {
	connect := "'self'"
	if saneHost(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
		"connect-src " + connect + "; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// saneHost accepts a host[:port] made of the characters host names and
// IP literals use, so a Host header cannot add to the policy.
func saneHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
