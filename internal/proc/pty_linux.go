package proc

import (
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// OutputTTY makes a pseudo-terminal for a child's output, in place of
// OutputPipe's pipe (tty: true, docs/semantics.md, "A terminal for the
// output"): r is the master, in the runtime's poller, for the parent to
// read as it reads a pipe; w is the slave, in blocking mode and outside
// the poller, the child's stdout and stderr. A read of r after every
// holder of w is gone fails with EIO, which ends it as a pipe's end does.
//
// The terminal translates nothing on output (no onlcr): a line ends with
// "\n" alone, as through a pipe. It is nobody's controlling terminal: w
// is opened with O_NOCTTY and the child does not take it, so closing r
// sends no SIGHUP, and the terminal sends no job-control signal.
func OutputTTY() (r, w *os.File, err error) {
	m, s, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	// pty.Open leaves both in blocking mode, m having been asked its
	// number through its Fd: each is taken again as a new descriptor of
	// its own with the mode it needs, and the originals closed.
	defer m.Close()
	defer s.Close()
	if err := rawOutput(int(s.Fd())); err != nil {
		return nil, nil, err
	}
	rfd, err := dupMode(int(m.Fd()), true)
	if err != nil {
		return nil, nil, err
	}
	wfd, err := dupMode(int(s.Fd()), false)
	if err != nil {
		unix.Close(rfd)
		return nil, nil, err
	}
	return os.NewFile(uintptr(rfd), "pty"), os.NewFile(uintptr(wfd), s.Name()), nil
}

// rawOutput turns off the terminal's output translation of fd: "\n"
// stays "\n" rather than becoming "\r\n".
func rawOutput(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return os.NewSyscallError("tcgets", err)
	}
	t.Oflag &^= unix.OPOST | unix.ONLCR
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return os.NewSyscallError("tcsets", err)
	}
	return nil
}

// dupMode is a close-on-exec copy of fd, non-blocking or not: the mode
// belongs to the open file, which the copy shares.
func dupMode(fd int, nonblock bool) (int, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("fcntl", err)
	}
	if err := unix.SetNonblock(nfd, nonblock); err != nil {
		unix.Close(nfd)
		return -1, os.NewSyscallError("fcntl", err)
	}
	return nfd, nil
}
