package xid_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/xid"
	"github.com/better-compute/vps/hostproto"
)

func TestParse(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, line string
		want       *hostproto.Xid
	}{
		{"fallen off the bus", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=nvidia-smi, GPU has fallen off the bus.",
			&hostproto.Xid{Address: "0000:3b:00.0", Code: 79, Message: "GPU has fallen off the bus."}},
		{"a /dev/kmsg record", "4,1187,8452344112,-;NVRM: Xid (PCI:0000:B1:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n",
			&hostproto.Xid{Address: "0000:b1:00.0", Code: 48, Message: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."}},
		{"dmesg with a timestamp", "[ 9123.456789] NVRM: Xid (PCI:0000:65:00): 94, pid=2211, name=python3, Contained: SM (0x1). RST: No, D-RST: No",
			&hostproto.Xid{Address: "0000:65:00.0", Code: 94, Message: "Contained: SM (0x1). RST: No, D-RST: No"}},
		{"an older driver, no pid", "NVRM: Xid (0000:02:00): 13, Graphics Exception: ESR 0x404600=0x80000002",
			&hostproto.Xid{Address: "0000:02:00.0", Code: 13, Message: "Graphics Exception: ESR 0x404600=0x80000002"}},
		{"a function given", "NVRM: Xid (PCI:0000:3b:00.1): 119, pid=1, name=x, Timeout after 6s of waiting for RPC response from GPU0 GSP!",
			&hostproto.Xid{Address: "0000:3b:00.1", Code: 119, Message: "Timeout after 6s of waiting for RPC response from GPU0 GSP!"}},
		{"a NUL and bad UTF-8 in the text", "NVRM: Xid (PCI:0000:3b:00): 31, pid=9, name=a, bad\x00 \xff text",
			&hostproto.Xid{Address: "0000:3b:00.0", Code: 31, Message: "bad \uFFFD text"}},
		{"another driver line", "NVRM: GPU at PCI:0000:3b:00: GPU-8e7c3b5a-6f36-1b4c-9c1e-3f0a2d1e5b7a", nil},
		{"a continuation line", " SUBSYSTEM=pci", nil},
		{"junk", "usb 1-1: new high-speed USB device number 2 using xhci_hcd", nil},
		{"code 0", "NVRM: Xid (PCI:0000:3b:00): 0, pid=1, name=x, nothing", nil},
		{"a four-digit code", "NVRM: Xid (PCI:0000:3b:00): 1000, pid=1, name=x, nothing", nil},
		{"no address", "NVRM: Xid (PCI:): 79, pid=1, name=x, GPU has fallen off the bus.", nil},
		{"empty", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := xid.Parse(c.line, at)
			if c.want == nil {
				if ok {
					t.Fatalf("parsed %+v from a line that is no Xid", got)
				}
				return
			}
			c.want.At = at
			if !ok || got != *c.want {
				t.Fatalf("Parse = %+v, %v; want %+v", got, ok, *c.want)
			}
		})
	}
	t.Run("a long message is cut", func(t *testing.T) {
		got, ok := xid.Parse("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, "+strings.Repeat("é", hostproto.MaxXidMessage), at)
		if !ok || len(got.Message) > hostproto.MaxXidMessage || !strings.HasPrefix(got.Message, "éé") || strings.ContainsRune(got.Message, '\uFFFD') {
			t.Fatalf("message of %d bytes: %q…", len(got.Message), got.Message[:8])
		}
	})
}

func TestCollector(t *testing.T) {
	t.Parallel()
	var notified int
	c := xid.NewCollector(3, func() { notified++ })
	for code := 1; code <= 5; code++ {
		c.Add(hostproto.Xid{Address: "0000:3b:00.0", Code: code})
	}
	got := c.Take()
	if len(got) != 3 || got[0].Code != 3 || got[2].Code != 5 || notified != 5 {
		t.Fatalf("took %+v after %d notifications; want codes 3 to 5, the oldest dropped, and 5", got, notified)
	}
	if again := c.Take(); len(again) != 0 {
		t.Fatalf("took %+v again", again)
	}
}

// follow runs Follow on path until the test ends, and returns its
// collector and a channel signalled on each event.
func follow(t *testing.T, path string) (*xid.Collector, chan struct{}) {
	added := make(chan struct{}, 100)
	c := xid.NewCollector(0, func() { added <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { xid.Follow(ctx, path, c, slog.New(slog.NewTextHandler(io.Discard, nil))) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return c, added
}

func waitAdded(t *testing.T, added chan struct{}) {
	t.Helper()
	select {
	case <-added:
	case <-time.After(10 * time.Second):
		t.Fatal("no Xid read")
	}
}

// TestFollowFile: a file standing in for the kernel log is read from its
// start and followed as it grows, a line written in two pieces read once
// whole; other lines are ignored.
func TestFollowFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(path, []byte("junk\nNVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, early\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, added := follow(t, path)
	waitAdded(t, added)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprint(f, "more junk\nNVRM: Xid (PCI:0000:5e:00): 79, pid=2, name=y, GPU has fallen ")
	fmt.Fprint(f, "off the bus.\n")
	waitAdded(t, added)
	got := c.Take()
	if len(got) != 2 || got[0].Code != 13 || got[1].Address != "0000:5e:00.0" || got[1].Message != "GPU has fallen off the bus." {
		t.Fatalf("read %+v", got)
	}
}

// TestFollowPipe: a pipe stands in for /dev/kmsg, whose reads block until
// the kernel logs; Follow ends when its context does, even blocked.
func TestFollowPipe(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kmsg")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", r.Fd()), path); err != nil {
		t.Fatal(err)
	}
	c, added := follow(t, path)
	fmt.Fprint(w, "6,1,2,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=nvidia-smi, GPU has fallen off the bus.\n")
	waitAdded(t, added)
	if got := c.Take(); len(got) != 1 || got[0].Code != 79 {
		t.Fatalf("read %+v", got)
	}
}

// TestFollowKmsg reads the real /dev/kmsg: only what is logged after Follow
// opened it counts. It writes an Xid line of a device no host has into the
// kernel log, so it needs root.
func TestFollowKmsg(t *testing.T) {
	t.Parallel()
	w, err := os.OpenFile(xid.KmsgPath, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("SKIPPED: /dev/kmsg is not writable here (%v): the kernel log reader was tested only against a pipe and a file", err)
	}
	defer w.Close()
	if r, err := os.Open(xid.KmsgPath); err != nil {
		t.Skipf("SKIPPED: /dev/kmsg is not readable here (%v): the kernel log reader was tested only against a pipe and a file", err)
	} else {
		r.Close()
	}
	before := fmt.Sprintf("NVRM: Xid (PCI:0000:ff:1f): 13, pid=1, name=bc-test, logged before (%d)\n", time.Now().UnixNano())
	if _, err := w.WriteString(before); err != nil {
		t.Fatal(err)
	}
	c, added := follow(t, xid.KmsgPath)
	// Follow has opened it once it reads: wait until a line written now
	// arrives, writing again until then.
	marker := fmt.Sprintf("bc-test %d", time.Now().UnixNano())
	deadline := time.Now().Add(10 * time.Second)
	var got []hostproto.Xid
	for len(got) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no Xid read from /dev/kmsg")
		}
		w.WriteString("NVRM: Xid (PCI:0000:ff:1f): 79, pid=1, name=x, " + marker + "\n")
		select {
		case <-added:
		case <-time.After(200 * time.Millisecond):
		}
		got = append(got, c.Take()...)
	}
	for _, x := range got {
		if x.Code != 79 || x.Address != "0000:ff:1f.0" || x.Message != marker {
			t.Fatalf("read %+v: want only what was logged after Follow started", x)
		}
	}
}
