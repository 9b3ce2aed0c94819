//go:build unix

package proc

import (
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Inheritable makes f's descriptor survive an exec of this process (on),
// or close on it again (off): how a daemon that executes its next program
// in place hands it its sockets.
func Inheritable(f *os.File, on bool) error {
	flags := unix.FD_CLOEXEC
	if on {
		flags = 0
	}
	_, err := unix.FcntlInt(uintptr(FD(f)), unix.F_SETFD, flags)
	return err
}

// FD is f's descriptor, read without the change of mode that f.Fd makes
// (it puts a non-blocking file in blocking mode, for every process that
// shares it: a socket a plugin accepts on must keep the mode it set).
func FD(f *os.File) int {
	fd := -1
	if sc, err := f.SyscallConn(); err == nil {
		sc.Control(func(d uintptr) { fd = int(d) })
	}
	return fd
}

// Listening is the address ("tcp:HOST:PORT" or "unix:PATH") of
// descriptor fd if it is a listening stream socket, else false. It looks
// at the number alone and takes nothing over: a descriptor found to be
// something else (one an exec closed and this program opened again) is
// left to its owner.
func Listening(fd int) (string, bool) {
	if fd < 0 {
		return "", false
	}
	if on, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || on != 1 {
		return "", false
	}
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
		return "", false
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return "", false
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return "tcp:" + net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port)), true
	case *unix.SockaddrInet6:
		return "tcp:" + net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port)), true
	case *unix.SockaddrUnix:
		return "unix:" + a.Name, true
	}
	return "", false
}
