package xid

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// KmsgPath is the kernel log of a Linux host.
const KmsgPath = "/dev/kmsg"

// pollInterval is how often Follow looks again at the end of a file that
// has nothing more for now (a regular file or a closed pipe; /dev/kmsg
// blocks instead).
const pollInterval = 200 * time.Millisecond

// maxLine bounds a line: a /dev/kmsg record is at most 8 KiB, and a
// longer line of a file is dropped.
const maxLine = 64 << 10

// Follow reads the kernel log at path and adds each Xid it finds (Parse,
// stamped with the time it was read) to c, until ctx ends. /dev/kmsg (a
// character device) is read from its end as Follow opens it, so only what
// the kernel logs from then on counts; a regular file or a pipe standing
// in for it is read from its start, and followed as it grows. A path that
// cannot be opened (missing, no permission) is logged once and Follow
// returns: a host without a kernel log to read still runs, without Xids.
func Follow(ctx context.Context, path string, c *Collector, log *slog.Logger) {
	f, err := os.Open(path)
	if err != nil {
		log.WarnContext(ctx, "not reading GPU Xid events: cannot open the kernel log", "path", path, "err", err)
		return
	}
	stop := context.AfterFunc(ctx, func() { f.Close() }) // ends a blocked read of /dev/kmsg
	defer func() {
		if stop() {
			f.Close()
		}
	}()
	if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			log.WarnContext(ctx, "kernel log: cannot skip what was logged before the daemon started", "path", path, "err", err)
		}
	}
	r := bufio.NewReaderSize(f, maxLine)
	var partial []byte
	for {
		chunk, err := r.ReadSlice('\n')
		partial = append(partial, chunk...)
		switch {
		case err == nil:
			if x, ok := Parse(string(partial), time.Now()); ok {
				c.Add(x)
			}
			partial = partial[:0]
		case errors.Is(err, bufio.ErrBufferFull):
			if len(partial) > maxLine {
				partial = partial[:0] // too long to be the driver's; dropped
			}
		case errors.Is(err, syscall.EPIPE):
			// /dev/kmsg overwrote records before they were read: go on
			// with the next one.
			partial = partial[:0]
			r.Reset(f)
		case errors.Is(err, io.EOF):
			select {
			case <-ctx.Done():
				return
			case <-time.After(pollInterval):
			}
		default:
			if ctx.Err() == nil {
				log.WarnContext(ctx, "stopped reading GPU Xid events: the kernel log failed", "path", path, "err", err)
			}
			return
		}
	}
}
