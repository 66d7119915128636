package imagecache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/internal/durable"
)

// parseSource parses an image URL, accepting the schemes the cache fetches
// from: file (an absolute path on this host), http and https.
func parseSource(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("file URL names host %q, not this one", u.Host)
		}
		if u.Opaque != "" || !filepath.IsAbs(u.Path) {
			return nil, errors.New("file URL has no absolute path")
		}
	case "http", "https":
		if u.Host == "" {
			return nil, errors.New("URL has no host")
		}
	default:
		return nil, fmt.Errorf("unsupported scheme %q (want file, http or https)", u.Scheme)
	}
	return u, nil
}

// fetch copies the image at src into the cache as path, the name for img.
// The bytes go to a temporary file in the cache directory and are hashed on
// the way; the file is synced, its SHA-256 and format are checked, and only
// then is it renamed to path. On any error the temporary file is removed.
func (c *Cache) fetch(ctx context.Context, src *url.URL, img hostproto.Image, path string) (err error) {
	// A fetch that just ended may have put the image in place between Get's
	// look and this one.
	if ok, err := present(path); err != nil || ok {
		return err
	}
	start := time.Now()
	log := c.log.With("url", src.Redacted(), "sha256", img.SHA256, "format", img.Format)
	log.Info("fetch image")
	defer func() {
		if err != nil {
			log.Warn("fetch image failed", "err", err)
		}
	}()

	body, err := c.open(ctx, src)
	if err != nil {
		return err
	}
	defer body.Close()

	tmp, err := os.CreateTemp(c.dir, tempPattern)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	h := sha256.New()
	n, err := io.Copy(tmp, io.TeeReader(durable.Reader(ctx, body), h))
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != img.SHA256 {
		return fmt.Errorf("%w: sha256 mismatch: got %s, want %s", ErrInvalidImage, got, img.SHA256)
	}
	if err := checkFormat(tmp, img.Format); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidImage, err)
	}
	// Read-only: the image is immutable, and the hypervisor reads it.
	if err := tmp.Chmod(0o444); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	durable.SyncDir(c.dir) // best effort: the image is intact either way; at worst it is fetched again
	log.Info("fetched image", "bytes", n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// open opens the image at src for reading.
//
// A file is copied, never hard-linked: a link shares the source's inode, so
// writing to the source in place would change the cached image after it was
// verified.
func (c *Cache) open(ctx context.Context, src *url.URL) (io.ReadCloser, error) {
	if src.Scheme == "file" {
		f, err := os.Open(src.Path)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("%s is not a regular file", src.Path)
		}
		return f, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	return resp.Body, nil
}
