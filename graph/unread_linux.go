package graph

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unread reports how many bytes written to conn its peer has not yet taken
// (Linux's SIOCOUTQ: sent and unacknowledged, or not sent at all).
func unread(conn net.Conn) (int, bool) {
	for { // under countingConn and TLS
		nc, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		conn = nc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	var ioErr error
	if err := rc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || ioErr != nil {
		return 0, false
	}
	return n, true
}
