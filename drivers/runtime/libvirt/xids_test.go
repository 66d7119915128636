package libvirt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/libvirt"
)

// TestXids: the runtime follows its kernel log (here a pipe standing in
// for /dev/kmsg, whose reads block the same way): an Xid line signals
// Changes and Xids returns it once; Close ends the blocked read. A kernel
// log that cannot be opened leaves the runtime working, without Xids.
func TestXids(t *testing.T) {
	t.Parallel()
	e := setup(t)
	t.Run("from the kernel log", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		kmsg := filepath.Join(e.dir, "kmsg")
		if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", r.Fd()), kmsg); err != nil {
			t.Fatal(err)
		}
		rt := e.runtime(func(c *libvirt.Config) { c.KmsgPath = kmsg })
		for len(rt.Changes()) > 0 {
			<-rt.Changes()
		}
		fmt.Fprint(w, "4,812,93412345,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n")
		select {
		case <-rt.Changes():
		case <-time.After(10 * time.Second):
			t.Fatal("no Changes signal for the Xid")
		}
		got := rt.Xids()
		if len(got) != 1 || got[0].Address != "0000:3b:00.0" || got[0].Code != 79 || got[0].Message != "GPU has fallen off the bus." {
			t.Fatalf("Xids = %+v", got)
		}
		if again := rt.Xids(); len(again) != 0 {
			t.Fatalf("Xids again = %+v", again)
		}
	})
	t.Run("without a kernel log", func(t *testing.T) {
		rt := e.runtime(func(c *libvirt.Config) { c.KmsgPath = filepath.Join(e.dir, "no-such-kmsg") })
		if _, err := rt.Inventory(context.Background()); err != nil {
			t.Fatalf("inventory: %v", err)
		}
		if got := rt.Xids(); len(got) != 0 {
			t.Fatalf("Xids = %+v", got)
		}
	})
}
