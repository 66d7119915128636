package libvirt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/better-compute/vps/hostproto"
)

// Inventory implements hostd.Runtime: the host's CPUs and memory as
// libvirt sees them, the free space of StateDir's file system, and its PCI
// GPUs (display and 3D controllers) from sysfs.
func (r *Runtime) Inventory(ctx context.Context) (hostproto.Inventory, error) {
	_, memKiB, cpus, _, _, _, _, _, err := r.l.NodeGetInfo()
	if err != nil {
		return hostproto.Inventory{}, fmt.Errorf("node info: %w", err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(r.cfg.StateDir, &fs); err != nil {
		return hostproto.Inventory{}, fmt.Errorf("disk of %s: %w", r.cfg.StateDir, err)
	}
	return hostproto.Inventory{
		Vcpus:    int(cpus),
		MemoryMB: int64(memKiB / 1024),
		DiskGB:   int64(fs.Blocks * uint64(fs.Bsize) >> 30),
		GPUs:     pciGPUs("/sys/bus/pci/devices"),
	}, nil
}

var vendors = map[string]string{"0x10de": "NVIDIA", "0x1002": "AMD", "0x8086": "Intel"}

// pciGPUs lists the display (0x0300) and 3D (0x0302) controllers under
// dir. Without pci.ids at hand, the model is the PCI device ID.
func pciGPUs(dir string) []hostproto.GPU {
	entries, _ := os.ReadDir(dir)
	var gpus []hostproto.GPU
	for _, e := range entries {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name(), name))
			return strings.TrimSpace(string(b))
		}
		class := read("class")
		if !strings.HasPrefix(class, "0x0300") && !strings.HasPrefix(class, "0x0302") {
			continue
		}
		vendor := read("vendor")
		name, ok := vendors[vendor]
		if !ok {
			name = vendor
		}
		gpus = append(gpus, hostproto.GPU{Address: e.Name(), Vendor: name, Model: strings.TrimPrefix(read("device"), "0x")})
	}
	return gpus
}
