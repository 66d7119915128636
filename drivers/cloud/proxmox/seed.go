package proxmox

import (
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
)

// SeedSMBIOS is the smbios1 value that points a VM's cloud-init at a
// NoCloud seed served over HTTP: cloud-init reads "ds=nocloud-net;s=<URL>"
// from the SMBIOS system serial number and fetches <URL>user-data and
// <URL>meta-data. Proxmox takes the value base64-encoded (base64=1) so the
// URL's characters need no escaping in its property string. The URL should
// end with "/".
func SeedSMBIOS(seedURL string) string {
	return "base64=1,serial=" + base64.StdEncoding.EncodeToString([]byte("ds=nocloud-net;s="+seedURL))
}

// SeedFromSMBIOS returns the NoCloud seed URL an smbios1 value made by
// SeedSMBIOS points at.
func SeedFromSMBIOS(smbios1 string) (string, bool) {
	for _, kv := range strings.Split(smbios1, ",") {
		if v, ok := strings.CutPrefix(kv, "serial="); ok {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return "", false
			}
			return strings.CutPrefix(string(b), "ds=nocloud-net;s=")
		}
	}
	return "", false
}

// size is a VM's size as a provider bootstrap's server type names it.
type size struct {
	vcpus    int
	memoryMB int64
}

// serverTypeRE is a Proxmox server type: "<vCPUs>x<memory MiB>", such as
// "4x8192".
var serverTypeRE = regexp.MustCompile(`^([1-9][0-9]{0,2})x([1-9][0-9]{1,7})$`)

// parseServerType reads a server type of the form "<vCPUs>x<memory MiB>":
// Proxmox has no server types, so a provider bootstrap names its machine's
// size this way.
func parseServerType(s string) (size, error) {
	m := serverTypeRE.FindStringSubmatch(s)
	if m == nil {
		return size{}, invalid("server type %q is not <vCPUs>x<memory MiB>, such as 4x8192", s)
	}
	vcpus, _ := strconv.Atoi(m[1])
	mem, _ := strconv.ParseInt(m[2], 10, 64)
	return size{vcpus: vcpus, memoryMB: mem}, nil
}
