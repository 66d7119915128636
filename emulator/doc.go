// Package emulator holds stateful emulators of the cloud APIs provider pools
// use (Hetzner Cloud, Proxmox VE), written from their public API docs, so the
// real client libraries can be driven in tests and in `better-compute dev`.
package emulator
