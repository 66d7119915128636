//go:build !linux

package graph

import "net"

// unread is unknown off Linux: only the write timeout bounds a slow client.
func unread(net.Conn) (int, bool) { return 0, false }
