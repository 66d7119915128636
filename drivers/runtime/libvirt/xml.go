package libvirt

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/better-compute/vps/hostproto"
)

// metadataNS is the namespace of the metadata that marks a domain as ours.
const metadataNS = "https://better-compute.dev/xmlns/instance/1"

// ownership is the metadata element of our domains: the instance, and the
// state directory of the runtime that made it. A runtime owns only the
// domains it made, so two daemons sharing a libvirtd (tests do) never touch
// each other's.
type ownership struct {
	XMLName  xml.Name `xml:"instance"`
	Instance string   `xml:"id"`
	StateDir string   `xml:"state-dir"`
}

// domainXML describes the domain of spec: its disk is the overlay over base
// (or, when base is of format iso, the ISO as a CD-ROM beside a blank disk), the seed is a
// read-only CD-ROM, the NIC has the instance's MAC (and, with a
// NetworkPolicy, the instance's network filter), and each claimed GPU is
// passed through.
func (r *Runtime) domainXML(spec hostproto.InstanceSpec, base, format string) (string, error) {
	d := &libvirtxml.Domain{
		Type: r.cfg.DomainType,
		Name: domainName(spec.ID),
		Metadata: &libvirtxml.DomainMetadata{XML: fmt.Sprintf(`<bc:instance xmlns:bc=%q><bc:id>%s</bc:id><bc:state-dir>%s</bc:state-dir></bc:instance>`,
			metadataNS, xmlEscape(spec.ID), xmlEscape(r.cfg.StateDir))},
		Memory: &libvirtxml.DomainMemory{Value: uint(spec.MemoryMB), Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: uint(spec.Vcpus)},
		OS: &libvirtxml.DomainOS{
			Type:        &libvirtxml.DomainOSType{Type: "hvm", Arch: "x86_64"},
			BootDevices: []libvirtxml.DomainBootDevice{{Dev: "hd"}, {Dev: "cdrom"}},
		},
		Features:   &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}},
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
		Devices: &libvirtxml.DomainDeviceList{
			Disks: []libvirtxml.DomainDisk{
				disk("disk", "qcow2", r.overlay(spec.ID), "vda", "virtio", false),
				disk("cdrom", "raw", r.seed(spec.ID), "sda", "sata", true),
			},
			Interfaces: []libvirtxml.DomainInterface{r.nic(spec)},
			Serials: []libvirtxml.DomainSerial{{
				Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: r.console(spec.ID)}},
			}},
		},
	}
	if format == "iso" {
		d.Devices.Disks = append(d.Devices.Disks, disk("cdrom", "raw", base, "sdb", "sata", true))
	}
	for _, gpu := range spec.GPUs {
		hd, err := hostdev(gpu.Address)
		if err != nil {
			return "", err
		}
		d.Devices.Hostdevs = append(d.Devices.Hostdevs, hd)
	}
	return d.Marshal()
}

func disk(device, format, path, target, bus string, readonly bool) libvirtxml.DomainDisk {
	dd := libvirtxml.DomainDisk{
		Device: device,
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: format},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: path}},
		Target: &libvirtxml.DomainDiskTarget{Dev: target, Bus: bus},
	}
	if readonly {
		dd.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	}
	return dd
}

func (r *Runtime) nic(spec hostproto.InstanceSpec) libvirtxml.DomainInterface {
	nic := libvirtxml.DomainInterface{Model: &libvirtxml.DomainInterfaceModel{Type: "virtio"}}
	if spec.Network != nil && spec.Network.MAC != "" {
		nic.MAC = &libvirtxml.DomainInterfaceMAC{Address: spec.Network.MAC}
	}
	if r.cfg.Bridge != "" {
		nic.Source = &libvirtxml.DomainInterfaceSource{Bridge: &libvirtxml.DomainInterfaceSourceBridge{Bridge: r.cfg.Bridge}}
		if spec.NetworkPolicy != nil {
			nic.FilterRef = &libvirtxml.DomainInterfaceFilterRef{Filter: filterName(spec.ID)}
		}
	} else {
		nic.Source = &libvirtxml.DomainInterfaceSource{User: &libvirtxml.DomainInterfaceSourceUser{}}
	}
	return nic
}

// hostdev passes through the PCI device at a domain:bus:slot.function
// address such as 0000:65:00.0.
func hostdev(addr string) (libvirtxml.DomainHostdev, error) {
	var dom, bus, slot, fn uint64
	parts := strings.FieldsFunc(addr, func(r rune) bool { return r == ':' || r == '.' })
	if len(parts) != 4 {
		return libvirtxml.DomainHostdev{}, fmt.Errorf("PCI address %q", addr)
	}
	var err error
	for i, p := range []*uint64{&dom, &bus, &slot, &fn} {
		if *p, err = strconv.ParseUint(parts[i], 16, 32); err != nil {
			return libvirtxml.DomainHostdev{}, fmt.Errorf("PCI address %q: %w", addr, err)
		}
	}
	u := func(v uint64) *uint { n := uint(v); return &n }
	return libvirtxml.DomainHostdev{
		Managed: "yes",
		SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{
			Source: &libvirtxml.DomainHostdevSubsysPCISource{
				Address: &libvirtxml.DomainAddressPCI{Domain: u(dom), Bus: u(bus), Slot: u(slot), Function: u(fn)},
			},
		},
	}, nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
