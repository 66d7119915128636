package libvirt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/better-compute/vps/hostproto"
)

func TestDomainXML(t *testing.T) {
	r := &Runtime{cfg: Config{DomainType: "kvm", StateDir: "/var/lib/bc", Bridge: "br0"}}
	spec := hostproto.InstanceSpec{
		ID: "ins_1", Vcpus: 8, MemoryMB: 65536, DiskGB: 100, Image: hostproto.Image{Format: "qcow2"},
		Network: &hostproto.Network{MAC: "02:bc:0a:00:00:05"},
		GPUs:    []hostproto.Device{{Address: "0000:65:00.0"}, {Address: "0000:b3:1f.7"}},
	}
	raw, err := r.domainXML(spec, "/var/lib/bc/images/x.qcow2", spec.Image.Format)
	if err != nil {
		t.Fatal(err)
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	if d.Type != "kvm" || d.Name != "bc-ins_1" || d.VCPU.Value != 8 || d.Memory.Value != 65536 || d.Memory.Unit != "MiB" {
		t.Fatalf("domain %s %s %d vCPUs %d %s", d.Type, d.Name, d.VCPU.Value, d.Memory.Value, d.Memory.Unit)
	}
	if !strings.Contains(d.Metadata.XML, "<bc:id>ins_1</bc:id><bc:state-dir>/var/lib/bc</bc:state-dir>") {
		t.Fatalf("metadata %s", d.Metadata.XML)
	}
	disks := d.Devices.Disks
	if len(disks) != 2 || disks[0].Source.File.File != "/var/lib/bc/overlays/ins_1.qcow2" || disks[0].Target.Bus != "virtio" ||
		disks[1].Device != "cdrom" || disks[1].Source.File.File != "/var/lib/bc/seeds/ins_1.iso" || disks[1].ReadOnly == nil {
		t.Fatalf("disks %+v", disks)
	}
	nic := d.Devices.Interfaces[0]
	if nic.MAC.Address != "02:bc:0a:00:00:05" || nic.Source.Bridge.Bridge != "br0" || nic.Model.Type != "virtio" {
		t.Fatalf("nic %+v", nic)
	}
	hds := d.Devices.Hostdevs
	if len(hds) != 2 {
		t.Fatalf("%d hostdevs", len(hds))
	}
	a := hds[1].SubsysPCI.Source.Address
	if *a.Domain != 0 || *a.Bus != 0xb3 || *a.Slot != 0x1f || *a.Function != 7 || hds[1].Managed != "yes" {
		t.Fatalf("hostdev address %d:%x:%x.%d", *a.Domain, *a.Bus, *a.Slot, *a.Function)
	}
	if _, err := hostdev("65:00"); err == nil {
		t.Fatal("a short PCI address was taken")
	}
}

func TestPCIGPUs(t *testing.T) {
	dir := t.TempDir()
	dev := func(addr, class, vendor, device string) {
		os.MkdirAll(filepath.Join(dir, addr), 0o755)
		for name, v := range map[string]string{"class": class, "vendor": vendor, "device": device} {
			os.WriteFile(filepath.Join(dir, addr, name), []byte(v+"\n"), 0o644)
		}
	}
	dev("0000:65:00.0", "0x030200", "0x10de", "0x26b9") // NVIDIA 3D controller
	dev("0000:00:02.0", "0x030000", "0x1234", "0x1111") // VGA of an unknown vendor
	dev("0000:00:1f.2", "0x010601", "0x8086", "0x2922") // SATA: not a GPU
	gpus := pciGPUs(dir)
	if len(gpus) != 2 || gpus[1] != (hostproto.GPU{Address: "0000:65:00.0", Vendor: "NVIDIA", Model: "26b9"}) || gpus[0].Vendor != "0x1234" {
		t.Fatalf("gpus %+v", gpus)
	}
}
