// Package drivers groups what the platform runs its instances with: the
// runtime drivers of hypervisor hosts (libvirt, fake), their NoCloud seeds
// (nocloud) and base-image cache (imagecache), and the provider drivers of
// provider pools (provider: the interface; hetzner and proxmox to come).
// The API never calls them: the host daemon and the reconciler do.
package drivers
