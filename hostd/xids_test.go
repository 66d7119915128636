package hostd_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/better-compute/vps/drivers/runtime/fake"
	"github.com/better-compute/vps/hostproto"
)

// TestXidsReported: an Xid line appended to the fake's kernel log goes to
// the gateway at once (the Runtime signals Changes; the heartbeat is an
// hour), in every report until one is accepted, and then no more; an Xid
// of a device that is not one of the host's GPUs is never sent.
func TestXidsReported(t *testing.T) {
	t.Parallel()
	gw := newGateway(t)
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hv := newHypervisor(t, fake.Config{GPUs: 2, KmsgFile: kmsg})
	start(t, gw, hv, heartbeat(time.Hour))
	waitReport(t, gw, "the 2 fake GPUs", func(r hostproto.Report) bool {
		return r.Inventory != nil && len(r.Inventory.GPUs) == 2 && r.Inventory.GPUs[1].Address == fake.GPUAddress(1)
	})

	gw.setDown(true)
	f, err := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("6,1,2,-;NVRM: Xid (PCI:0000:ff:00): 79, pid=1, name=x, not ours\n")
	f.WriteString("6,2,3,-;NVRM: Xid (PCI:0000:3c:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n")
	select {
	case <-gw.refused:
	case <-time.After(waitFor):
		t.Fatal("no report was tried after the Xid")
	}
	gw.setDown(false)
	r := waitReport(t, gw, "the Xid", func(r hostproto.Report) bool { return len(r.Xids) > 0 })
	if len(r.Xids) != 1 || r.Xids[0].Address != fake.GPUAddress(1) || r.Xids[0].Code != 79 || r.Xids[0].Message != "GPU has fallen off the bus." {
		t.Fatalf("reported Xids %+v, want only Xid 79 of %s", r.Xids, fake.GPUAddress(1))
	}

	// A report made while the accepted one was on the wire may carry the
	// Xid again (the gateway takes it twice as once); one made after the
	// next report was posted, which the daemon does only once the
	// accepted one was answered, may not.
	gen := gw.setSpec()
	waitReport(t, gw, "the next spec", func(r hostproto.Report) bool { return r.Generation == gen })
	gen = gw.setSpec()
	r = waitReport(t, gw, "the spec after", func(r hostproto.Report) bool { return r.Generation == gen })
	if len(r.Xids) != 0 {
		t.Fatalf("an accepted Xid was sent again: %+v", r.Xids)
	}
}
