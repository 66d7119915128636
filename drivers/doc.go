// Package drivers holds no code. It groups what the platform runs instances
// with, in two families that never meet, by the side of the wire they work
// on:
//
//   - runtime/… is the host daemon's side: the Runtimes a host converges
//     its NodeSpec through (libvirt for real hosts, fake for simulated
//     ones), the NoCloud seeds they render (nocloud) and the base-image
//     cache (imagecache).
//   - cloud is the reconciler's side: the Driver interface through which
//     it runs a provider pool's instances and the classes of error it
//     acts on, with one driver per provider below it (cloud/hetzner,
//     cloud/proxmox). Beside each driver is an emulator of its provider's
//     API (cloud/hetzner/hetznertest, cloud/proxmox/proxmoxtest), and
//     cloud/cloudtest injects faults into them: test support that
//     `better-compute dev` also serves.
//
// The API never calls either: the host daemon and the reconciler do.
package drivers
