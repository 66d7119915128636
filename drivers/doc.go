// Package drivers will hold the runtime drivers (libvirt, fake) and the
// provider drivers (hetzner, proxmox, fake) the reconciler and the host
// daemon use (issues 3, 5 and 6). The API never calls them.
package drivers
