//go:build unix

package proc

import (
	"os"

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
