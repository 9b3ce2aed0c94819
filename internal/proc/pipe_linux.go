package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// OutputPipe makes a pipe for a child's output: the read end in the
// runtime's poller, for the parent to copy from; the write end in
// blocking mode and outside the poller, as a child's stdout and stderr
// are. It takes half the system calls of os.Pipe, whose write end would
// join the poller only to leave it again for the child.
func OutputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETFL, 0); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
