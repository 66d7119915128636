// Package durable writes files so that a crash leaves each either absent
// or complete: through a temporary file beside it, synced, renamed over
// it, and its directory synced. The host daemon's journal, the runtimes'
// snapshot stores and the image cache write with it.
package durable

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes data to path durably. The temporary file is named after
// path's base with tmpExt at its end, so that a caller can find and remove
// the partial files a crash left (filepath.Glob(path + ".*" + tmpExt)).
func WriteFile(path string, data []byte, tmpExt string) error {
	return Write(context.Background(), path, bytes.NewReader(data), tmpExt)
}

// Write writes what r gives to path durably, as WriteFile does, and stops
// with ctx's error once ctx is done; path is then left as it was.
func Write(ctx context.Context, path string, r io.Reader, tmpExt string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*"+tmpExt)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = io.Copy(f, Reader(ctx, r))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = SyncDir(dir)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir syncs directory dir, so that a rename or removal in it survives
// a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Reader reads r until ctx is done, then fails with ctx's error: a copy
// from a file, which does not watch ctx itself, stops too.
func Reader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
