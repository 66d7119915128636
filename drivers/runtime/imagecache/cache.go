// Package imagecache is a hypervisor host's cache of base images. The
// libvirt runtime driver asks it for a local copy of an instance's image and
// puts a qcow2 overlay over the file it returns.
//
// Get copies (file://) or downloads (http://, https://) an image into the
// cache directory, verifying its SHA-256 and its format while the file is
// still a temporary one, and renames it into place only once both match. The
// final name is derived from the SHA-256 and the format, so an image is kept
// once however many URLs it is fetched from, and since nothing else is ever
// renamed into place, a file under its final name is trusted without being
// read again.
package imagecache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// ErrInvalidImage marks an image that is not what its registration says:
// its checksum or its format is wrong. Fetching it again will not help.
var ErrInvalidImage = errors.New("invalid image")

// Config configures a Cache. A zero field takes the default its comment
// gives.
type Config struct {
	// Dir is the directory the images are kept in; New creates it. Required.
	// It belongs to one Cache: New removes the partial downloads a crash left
	// there, and files other than the cache's own are ignored.
	Dir string
	// HTTPClient downloads http and https images. Images run to gigabytes,
	// so the default bounds dialing, the TLS handshake and the wait for the
	// response header (30 s, 10 s, 60 s), but not the body: bound a whole
	// download with Get's context.
	HTTPClient *http.Client
	// Logger is the cache's log. Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults; it is
// the one place they are set.
func (c Config) withDefaults() Config {
	if c.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		t.TLSHandshakeTimeout = 10 * time.Second
		t.ResponseHeaderTimeout = 60 * time.Second
		c.HTTPClient = &http.Client{Transport: t}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Cache is a directory of verified base images. Its methods are safe for
// concurrent use.
type Cache struct {
	dir  string
	http *http.Client
	log  *slog.Logger

	mu sync.Mutex
	// flights holds the fetches under way, by key.
	flights map[string]*flight
	// joined, when set (by tests), is called each time a Get starts to wait
	// for a fetch.
	joined func()
}

// tempPattern names the temporary files of fetches under way (see
// os.CreateTemp); New removes those a crash left behind.
const tempPattern = ".fetch-*.part"

// New returns a Cache keeping its images in cfg.Dir, which it creates, with
// defaults applied to cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, errors.New("imagecache: no dir")
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("imagecache: create dir: %w", err)
	}
	stale, err := filepath.Glob(filepath.Join(cfg.Dir, tempPattern))
	if err != nil {
		return nil, fmt.Errorf("imagecache: list partial downloads: %w", err)
	}
	for _, name := range stale {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("imagecache: remove partial download: %w", err)
		}
	}
	return &Cache{
		dir:     cfg.Dir,
		http:    cfg.HTTPClient,
		log:     cfg.Logger,
		flights: make(map[string]*flight),
	}, nil
}

// Get returns the path of a local file holding exactly img, fetching it
// first unless the cache has it. The file is the cache's own (never the
// source of a file:// URL), read-only, and stays until Remove.
//
// Concurrent Gets of one image share one fetch. When ctx is done, Get
// returns its error; the fetch goes on for the other Gets waiting for it,
// and is aborted, its temporary file removed, when none is left.
func (c *Cache) Get(ctx context.Context, img hostproto.Image) (path string, err error) {
	src, err := parseSource(img.URL)
	if err != nil {
		return "", fmt.Errorf("fetch image %s: %w", img.URL, err)
	}
	name, err := fileName(img)
	if err != nil {
		return "", fmt.Errorf("fetch image %s: %w", src.Redacted(), err)
	}
	path = filepath.Join(c.dir, name)
	if ok, err := present(path); err != nil {
		return "", fmt.Errorf("fetch image %s: %w", src.Redacted(), err)
	} else if ok {
		return path, nil
	}
	err = c.share(ctx, name, func(ctx context.Context) error {
		return c.fetch(ctx, src, img, path)
	})
	if err != nil {
		return "", fmt.Errorf("fetch image %s: %w", src.Redacted(), err)
	}
	return path, nil
}

// Remove removes img from the cache, if it is there. Overlays made over it
// still need it: removing is the caller's decision.
func (c *Cache) Remove(img hostproto.Image) error {
	name, err := fileName(img)
	if err != nil {
		return fmt.Errorf("remove image %s: %w", img.URL, err)
	}
	if err := os.Remove(filepath.Join(c.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove image %s: %w", img.URL, err)
	}
	return nil
}

// fileName returns the name img is kept under, <sha256>.<format>, after
// checking both parts (they become a file name, so neither may hold a path).
func fileName(img hostproto.Image) (string, error) {
	if !isSHA256(img.SHA256) {
		return "", fmt.Errorf("sha256 %q is not 64 lowercase hex digits", img.SHA256)
	}
	if !knownFormat(img.Format) {
		return "", fmt.Errorf("unsupported format %q (want raw, qcow2 or iso)", img.Format)
	}
	return img.SHA256 + "." + img.Format, nil
}

// isSHA256 reports whether s is a SHA-256 in lowercase hex.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// present reports whether a regular file exists at path.
func present(path string) (bool, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.Mode().IsRegular():
		return false, fmt.Errorf("%s is not a regular file", path)
	}
	return true, nil
}
