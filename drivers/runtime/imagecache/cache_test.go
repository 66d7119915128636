package imagecache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/imagecache"
	"github.com/better-compute/vps/hostproto"
)

// waitFor bounds every wait on a signal, so that a bug fails a test rather
// than hangs it.
const waitFor = 10 * time.Second

// The images of the tests.
var (
	rawImage = []byte("\xeb\x63\x90 a raw disk: boot sector and the rest")
	// qcow2Image is the start of a qcow2 version 3 header: no backing file,
	// no incompatible features. Enough for the checks of the cache.
	qcow2Image = func() []byte {
		b := make([]byte, 104)
		copy(b, "QFI\xfb\x00\x00\x00\x03")
		return b
	}()
	isoImage = func() []byte {
		b := make([]byte, 0x8800)
		copy(b[0x8000:], "\x01CD001\x01")
		return b
	}()
)

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func newCache(t *testing.T) (*imagecache.Cache, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "images")
	c, err := imagecache.New(imagecache.Config{
		Dir:    dir,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, dir
}

// server serves content at every path and counts the requests.
type server struct {
	*httptest.Server
	requests atomic.Int64
}

func serve(t *testing.T, content []byte) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		w.Write(content)
	}))
	t.Cleanup(s.Close)
	return s
}

// fileURL writes content to a file and returns its file:// URL.
func fileURL(t *testing.T, content []byte) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "source.img")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return (&url.URL{Scheme: "file", Path: path}).String(), path
}

// files lists the names in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// checkImage checks that path is in dir, named for img, and holds want.
func checkImage(t *testing.T, dir, path string, img hostproto.Image, want []byte) {
	t.Helper()
	if wantPath := filepath.Join(dir, img.SHA256+"."+img.Format); path != wantPath {
		t.Errorf("path = %s, want %s", path, wantPath)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}

func TestGetFileRaw(t *testing.T) {
	c, dir := newCache(t)
	u, src := fileURL(t, rawImage)
	img := hostproto.Image{URL: u, SHA256: sum(rawImage), Format: "raw"}

	path, err := c.Get(t.Context(), img)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, dir, path, img, rawImage)

	// The cache holds a copy: changing the source in place, after the
	// image was verified, does not change the cached image.
	f, err := os.OpenFile(src, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("evil"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	checkImage(t, dir, path, img, rawImage)
}

func TestGetHTTP(t *testing.T) {
	tests := []struct {
		format  string
		content []byte
	}{
		{"qcow2", qcow2Image},
		{"iso", isoImage},
		{"raw", rawImage},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			c, dir := newCache(t)
			s := serve(t, tt.content)
			img := hostproto.Image{URL: s.URL + "/image", SHA256: sum(tt.content), Format: tt.format}

			path, err := c.Get(t.Context(), img)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, dir, path, img, tt.content)
			if got := files(t, dir); len(got) != 1 {
				t.Errorf("dir holds %q, want only the image", got)
			}
		})
	}
}

func TestGetCached(t *testing.T) {
	c, dir := newCache(t)
	s := serve(t, qcow2Image)
	img := hostproto.Image{URL: s.URL + "/a.qcow2", SHA256: sum(qcow2Image), Format: "qcow2"}

	first, err := c.Get(t.Context(), img)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Get(t.Context(), img)
	if err != nil {
		t.Fatal(err)
	}
	// The same image from another URL is the same file.
	img.URL = s.URL + "/mirror/b.qcow2"
	third, err := c.Get(t.Context(), img)
	if err != nil {
		t.Fatal(err)
	}

	if second != first || third != first {
		t.Errorf("paths = %s, %s, %s; want one path", first, second, third)
	}
	if n := s.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	checkImage(t, dir, first, img, qcow2Image)
}

func TestGetConcurrentSharesOneDownload(t *testing.T) {
	const callers = 10
	c, dir := newCache(t)
	var requests atomic.Int64
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-release:
			w.Write(qcow2Image)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	joined := make(chan struct{}, callers)
	imagecache.SetJoinHook(c, func() { joined <- struct{}{} })
	img := hostproto.Image{URL: s.URL, SHA256: sum(qcow2Image), Format: "qcow2"}

	paths := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { paths[i], errs[i] = c.Get(t.Context(), img) })
	}
	// Release the download only once every caller waits for it.
	for range callers {
		select {
		case <-joined:
		case <-time.After(waitFor):
			t.Fatal("callers did not all wait for the download")
		}
	}
	close(release)
	wg.Wait()

	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		checkImage(t, dir, paths[i], img, qcow2Image)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestGetFails(t *testing.T) {
	qcow2WithBacking := slices.Clone(qcow2Image)
	qcow2WithBacking[15] = 104 // backing file name at offset 104
	qcow2WithDataFile := slices.Clone(qcow2Image)
	qcow2WithDataFile[79] = 1 << 2 // incompatible feature: external data file

	tests := []struct {
		name    string
		handler http.HandlerFunc // serves the image when URL is empty
		url     string
		sha256  string // default: that of what the handler serves
		format  string
		want    string // in the error
	}{{
		name:    "sha256 mismatch",
		handler: content(rawImage),
		sha256:  sum([]byte("another image")),
		format:  "raw",
		want:    "sha256 mismatch: got " + sum(rawImage) + ", want " + sum([]byte("another image")),
	}, {
		name:    "raw that is qcow2",
		handler: content(qcow2Image),
		format:  "raw",
		want:    "format mismatch: declared raw",
	}, {
		name:    "iso without CD001",
		handler: content(rawImage),
		format:  "iso",
		want:    "format mismatch: declared iso",
	}, {
		name:    "qcow2 without magic",
		handler: content(rawImage),
		format:  "qcow2",
		want:    "format mismatch: declared qcow2",
	}, {
		name:    "qcow2 with backing file",
		handler: content(qcow2WithBacking),
		format:  "qcow2",
		want:    "format refused: qcow2 image names a backing file",
	}, {
		name:    "qcow2 with external data file",
		handler: content(qcow2WithDataFile),
		format:  "qcow2",
		want:    "format refused: qcow2 image names an external data file",
	}, {
		name: "not found",
		handler: func(w http.ResponseWriter, r *http.Request) {
			http.NotFound(w, r)
		},
		sha256: sum(rawImage),
		format: "raw",
		want:   "HTTP status 404 Not Found",
	}, {
		name:   "unknown scheme",
		url:    "ftp://images.example/debian.raw",
		sha256: sum(rawImage),
		format: "raw",
		want:   `unsupported scheme "ftp"`,
	}, {
		name:   "missing file",
		url:    "file:///nonexistent/debian.raw",
		sha256: sum(rawImage),
		format: "raw",
		want:   "no such file",
	}, {
		name:    "unsupported format",
		handler: content(rawImage),
		format:  "vmdk",
		want:    `unsupported format "vmdk"`,
	}, {
		name:    "sha256 not lowercase hex",
		handler: content(rawImage),
		sha256:  strings.ToUpper(sum(rawImage)),
		format:  "raw",
		want:    "not 64 lowercase hex digits",
	}, {
		name:    "sha256 a path",
		handler: content(rawImage),
		sha256:  "../../etc/passwd",
		format:  "raw",
		want:    "not 64 lowercase hex digits",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dir := newCache(t)
			img := hostproto.Image{URL: tt.url, SHA256: tt.sha256, Format: tt.format}
			if tt.handler != nil {
				s := httptest.NewServer(tt.handler)
				t.Cleanup(s.Close)
				img.URL = s.URL + "/image"
				if img.SHA256 == "" {
					img.SHA256 = sum(servedBy(t, tt.handler))
				}
			}

			path, err := c.Get(t.Context(), img)
			if err == nil {
				t.Fatalf("Get = %s, want an error", path)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if got := files(t, dir); len(got) != 0 {
				t.Errorf("dir holds %q after a failed Get, want nothing", got)
			}
		})
	}
}

// content returns a handler serving b.
func content(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.Write(b) }
}

// servedBy returns the body h serves.
func servedBy(t *testing.T, h http.HandlerFunc) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/image", nil))
	return rec.Body.Bytes()
}

// slowServer sends the first bytes of an image, then stalls until the
// client goes away. started is closed once the first bytes are sent.
func slowServer(t *testing.T) (s *httptest.Server, started chan struct{}, release chan struct{}) {
	t.Helper()
	started = make(chan struct{})
	release = make(chan struct{})
	var once sync.Once
	s = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(qcow2Image[:8])
		w.(http.Flusher).Flush()
		once.Do(func() { close(started) })
		select {
		case <-r.Context().Done():
		case <-release:
			w.Write(qcow2Image[8:])
		}
	}))
	t.Cleanup(s.Close)
	return s, started, release
}

func TestGetCancelled(t *testing.T) {
	c, dir := newCache(t)
	s, started, _ := slowServer(t)
	img := hostproto.Image{URL: s.URL, SHA256: sum(qcow2Image), Format: "qcow2"}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, img)
		errc <- err
	}()

	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("download did not start")
	}
	cancel()
	var err error
	select {
	case err = <-errc:
	case <-time.After(waitFor):
		t.Fatal("Get did not return after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Get error = %v, want context.Canceled", err)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("dir holds %q after the cancelled Get, want nothing", got)
	}
}

func TestGetCancelledLeavesSharedDownload(t *testing.T) {
	c, dir := newCache(t)
	s, started, release := slowServer(t)
	joined := make(chan struct{}, 2)
	imagecache.SetJoinHook(c, func() { joined <- struct{}{} })
	img := hostproto.Image{URL: s.URL, SHA256: sum(qcow2Image), Format: "qcow2"}

	quitter, quit := context.WithCancel(t.Context())
	quitErr := make(chan error, 1)
	go func() {
		_, err := c.Get(quitter, img)
		quitErr <- err
	}()
	type result struct {
		path string
		err  error
	}
	stayed := make(chan result, 1)
	go func() {
		path, err := c.Get(t.Context(), img)
		stayed <- result{path, err}
	}()
	for range 2 {
		select {
		case <-joined:
		case <-time.After(waitFor):
			t.Fatal("callers did not both wait for the download")
		}
	}
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("download did not start")
	}

	// One caller giving up returns at once, and the download goes on for
	// the other.
	quit()
	select {
	case err := <-quitErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Get error = %v, want context.Canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("cancelled Get did not return")
	}
	close(release)
	select {
	case r := <-stayed:
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkImage(t, dir, r.path, img, qcow2Image)
	case <-time.After(waitFor):
		t.Fatal("the other Get did not return")
	}
}

func TestRemove(t *testing.T) {
	c, dir := newCache(t)
	s := serve(t, rawImage)
	img := hostproto.Image{URL: s.URL, SHA256: sum(rawImage), Format: "raw"}
	if _, err := c.Get(t.Context(), img); err != nil {
		t.Fatal(err)
	}

	if err := c.Remove(img); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("dir holds %q after Remove, want nothing", got)
	}
	if err := c.Remove(img); err != nil {
		t.Errorf("Remove of an image not in the cache: %v", err)
	}
	// Once removed, the image is fetched again.
	if _, err := c.Get(t.Context(), img); err != nil {
		t.Fatal(err)
	}
	if n := s.requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestNewRemovesPartialDownloads(t *testing.T) {
	dir := t.TempDir()
	partial := filepath.Join(dir, ".fetch-123.part")
	if err := os.WriteFile(partial, []byte("QFI"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := imagecache.New(imagecache.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("dir holds %q after New, want nothing", got)
	}
}
