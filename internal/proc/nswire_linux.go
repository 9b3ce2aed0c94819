package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The host (any process with a Spawner) and the init of its PID namespace
// talk over a SOCK_SEQPACKET socket pair, or, once the init has outlived
// the host that made it, over a connection to its attach socket
// (nshold_linux.go): one message is one line of words, and a message may
// carry up to two file descriptors.
//
//	host → init   start ID LEN\n… + the plugin's output, and the pipe's read end when it has one; after the newline the first of the LEN bytes of its initSpec (initSpec.encode), the rest in the next messages
//	              reap NSPID      the plugin has terminated: reap it
//	              hold MS ALL     when this host goes, keep the plugins MS milliseconds for the next (ALL 1: those started without Hold too)
//	              term NSPID MS   stop the plugin in MS milliseconds unless told again first (MS 0: no more); from init version 7
//	              quit            end now: the host stopped its plugins
//	init → host   ready           once, when the init runs
//	              pid ID NSPID    + a pidfd of the plugin, once its program runs (its pid here: pidOfPidfd)
//	              err ID ERRNO    the plugin could not be started
//	              status NSPID WS the plugin's wait status, once reaped
//	              held N GONE     + a pidfd of the init, to a host that attached: the N plugins kept for it follow; GONE: when its host was gone, in Unix milliseconds
//	              plugin NSPID LEN\n… + a pidfd of it, and its pipe's read end when it has one; after the newline its tag, LEN bytes
const (
	// chunk is the most bytes of a spec one message carries: well below
	// the socket's limit on a message (its send buffer, about 200 KiB).
	chunk = 32 << 10
	// maxMsg is the size of a receive buffer: a chunk and a header.
	maxMsg = chunk + 64
)

// wire is one end of the socket pair. The init's end is in blocking mode:
// one goroutine serves it, waiting in recvmsg. The host's end is in the
// runtime's poller: a goroutine waiting for an answer parks, and its
// thread is free for the goroutines the host readied meanwhile (a thread
// blocked in recvmsg with others waiting for its P would have them taken
// over by another thread, each time).
type wire struct {
	fd   int
	f    *os.File        // the polled end, else nil
	rc   syscall.RawConn // f's
	buf  []byte
	oob  []byte
	once sync.Once
}

// newWire wraps fd, one end of a socket pair in blocking mode, which it
// takes over.
func newWire(fd int) *wire {
	return &wire{fd: fd, buf: make([]byte, maxMsg), oob: make([]byte, unix.CmsgSpace(4*maxFDs))}
}

// newPolledWire wraps fd, one end of a socket pair, which it takes over,
// in the runtime's poller.
func newPolledWire(fd int) (*wire, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	w := newWire(fd)
	w.f = os.NewFile(uintptr(fd), "init socket")
	rc, err := w.f.SyscallConn()
	if err != nil {
		w.f.Close()
		return nil, err
	}
	w.rc = rc
	return w, nil
}

// io runs op on the socket until it neither is interrupted nor, on a
// polled end, would block (waiting in the poller for the socket to turn
// readable, or writable).
func (w *wire) io(write bool, op func(fd int) error) error {
	var err error
	try := func(fd uintptr) bool {
		for err = op(int(fd)); err == unix.EINTR; err = op(int(fd)) {
		}
		return err != unix.EAGAIN
	}
	if w.rc == nil {
		try(uintptr(w.fd))
		return err
	}
	var perr error
	if write {
		perr = w.rc.Write(try)
	} else {
		perr = w.rc.Read(try)
	}
	if perr != nil {
		return perr
	}
	return err
}

// maxFDs is the most descriptors one message carries: a start's output,
// its pipe's read end, and its held sockets (Cmd.Files).
const maxFDs = 2 + MaxFiles

// send sends one message, with the descriptors of fds that are not
// negative attached.
func (w *wire) send(msg []byte, fds ...int) error {
	var oob []byte
	var attach []int
	for _, fd := range fds {
		if fd >= 0 {
			attach = append(attach, fd)
		}
	}
	if len(attach) > 0 {
		oob = unix.UnixRights(attach...)
	}
	return w.io(true, func(s int) error { return unix.Sendmsg(s, msg, oob, nil, unix.MSG_NOSIGNAL) })
}

// sendf sends a message of words, with fd (if not negative) attached.
func (w *wire) sendf(fd int, format string, args ...any) error {
	return w.send(fmt.Appendf(nil, format, args...), fd)
}

// receive reads the next message: its bytes (valid until the next call)
// and the first descriptor it carried (close-on-exec), or -1; any other
// is closed.
func (w *wire) receive() ([]byte, int, error) {
	msg, fds, err := w.receiveFDs()
	fd := -1
	for i, f := range fds {
		if i == 0 {
			fd = f
		} else {
			unix.Close(f)
		}
	}
	return msg, fd, err
}

// receiveFDs reads the next message: its bytes (valid until the next
// call) and the descriptors it carried (close-on-exec), in order.
func (w *wire) receiveFDs() ([]byte, []int, error) {
	var n, oobn, flags int
	err := w.io(false, func(s int) (err error) {
		n, oobn, flags, _, err = unix.Recvmsg(s, w.buf, w.oob, unix.MSG_CMSG_CLOEXEC)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if n == 0 && oobn == 0 {
		return nil, nil, errors.New("the other end closed")
	}
	var fds []int
	if oobn > 0 {
		fds = rights(w.oob[:oobn])
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || len(fds) > maxFDs {
		closeAll(fds)
		return nil, nil, errors.New("a message was cut short")
	}
	return w.buf[:n], fds, nil
}

// closeAll closes every descriptor of fds.
func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// shutdown ends the socket both ways: a receive under way returns, and
// the other end reads its end.
func (w *wire) shutdown() {
	if w.rc == nil {
		unix.Shutdown(w.fd, unix.SHUT_RDWR)
		return
	}
	w.rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RDWR) })
}

// close closes the socket, once its reader has returned.
func (w *wire) close() {
	w.once.Do(func() {
		if w.f != nil {
			w.f.Close()
			return
		}
		unix.Close(w.fd)
	})
}

// rights are the descriptors that oob carries.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var out []int
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err == nil {
			out = append(out, fds...)
		}
	}
	return out
}

// words splits a message into its word and its numbers.
func words(msg []byte) (string, []int, error) {
	f := strings.Fields(string(msg))
	if len(f) == 0 {
		return "", nil, errors.New("an empty message")
	}
	nums := make([]int, 0, len(f)-1)
	for _, s := range f[1:] {
		n, err := strconv.Atoi(s)
		if err != nil {
			return "", nil, fmt.Errorf("a message %q", msg)
		}
		nums = append(nums, n)
	}
	return f[0], nums, nil
}

// pidOfPidfd is the pid, in this process's PID namespace, of the process
// that pidfd fd refers to: one ioctl (PIDFD_GET_INFO, Linux 6.13), else
// the Pid line of its fdinfo. In a namespace's init the two differ: the
// ioctl answers the namespace's pid, the fdinfo the machine's (its /proc
// is the machine's).
func pidOfPidfd(fd int) (int, error) {
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
	if err := unix.IoctlPidfdInfo(fd, &info); err == nil && info.Mask&unix.PIDFD_INFO_PID != 0 && info.Tgid > 0 {
		return int(info.Tgid), nil
	}
	return pidfdPid(fd)
}

// pidfdPid is the pid, in this process's /proc (the machine's), of the
// process that pidfd fd refers to: the Pid line of its fdinfo.
func pidfdPid(fd int) (int, error) {
	b, err := readProc("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(rest)))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("pidfd %d: its process has ended", fd)
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("pidfd %d: no Pid in its fdinfo (Linux 5.4 or later needed)", fd)
}
