package nocloud

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Files returns the seed's files by name, as they go on the cidata disk.
// network-config is left out when the instance has no static address, and
// vendor-data when it has no env.
func (s Seed) Files() map[string]string {
	files := map[string]string{"meta-data": s.MetaData, "user-data": s.UserData}
	if s.NetworkConfig != "" {
		files["network-config"] = s.NetworkConfig
	}
	if s.VendorData != "" {
		files["vendor-data"] = s.VendorData
	}
	return files
}

// WriteISO writes the seed as an ISO 9660 image labelled "cidata", the
// form NoCloud reads from a CD-ROM. It needs genisoimage (Debian's
// genisoimage package).
func (s Seed) WriteISO(ctx context.Context, path string) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".seed-")
	if err != nil {
		return fmt.Errorf("write seed: %w", err)
	}
	defer os.RemoveAll(dir)
	args := []string{"-quiet", "-output", path + ".tmp", "-volid", "cidata", "-joliet", "-rock"}
	for name, content := range s.Files() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return fmt.Errorf("write seed: %w", err)
		}
		args = append(args, filepath.Join(dir, name))
	}
	if out, err := exec.CommandContext(ctx, "genisoimage", args...).CombinedOutput(); err != nil {
		os.Remove(path + ".tmp")
		return fmt.Errorf("write seed ISO: %w: %s", err, out)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("write seed ISO: %w", err)
	}
	return nil
}
