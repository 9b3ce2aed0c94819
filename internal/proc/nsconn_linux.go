package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsInit is the init of a Spawner's namespace, seen from the Spawner's
// process, whose child it is. One goroutine reads what it says and hands
// each answer to the start or reap that waits for it.
type nsInit struct {
	pid int // on the machine
	w   *wire
	wmu sync.Mutex // one request, all its messages, at a time
	// closed is set, under wmu, once its socket is closed: no request
	// may write to a descriptor that may name another file by then.
	closed bool

	mu     sync.Mutex
	nextID int
	starts map[int]chan started            // by request
	reaps  map[int]chan syscall.WaitStatus // by pid in the namespace
	err    error                           // why it ended
	done   chan struct{}                   // closed when it has ended
}

// initEnded is the error of a start the init could not answer: it ended,
// and with it its namespace, the plugin included if it had started it.
type initEnded struct{ err error }

func (e *initEnded) Error() string { return e.err.Error() }
func (e *initEnded) Unwrap() error { return e.err }

// started is the init's answer to a start: the plugin's pid in the
// namespace and a pidfd of it, or the errno of its failure.
type started struct {
	nspid, pid, pidfd int
	errno             syscall.Errno
}

// startInit waits for the init of pid to say it runs, then reads its
// answers until it ends; then reaps it (waiting, for Spawner.Close).
func startInit(pid int, w *wire, waiting *sync.WaitGroup) (*nsInit, error) {
	in := &nsInit{pid: pid, w: w, starts: map[int]chan started{}, reaps: map[int]chan syscall.WaitStatus{},
		done: make(chan struct{})}
	msg, fd, err := w.receive()
	if fd >= 0 {
		unix.Close(fd)
	}
	if err == nil && string(msg) != "ready" {
		err = fmt.Errorf("it said %q", msg)
	}
	waiting.Add(1)
	go func() {
		defer waiting.Done()
		if err == nil {
			in.read()
		}
		in.wmu.Lock()
		in.closed = true
		w.close()
		in.wmu.Unlock()
		in.wait()
	}()
	if err != nil {
		return nil, fmt.Errorf("its init (%s run again) did not start: %v", os.Args[0], err)
	}
	return in, nil
}

// read hands the init's answers to their waiters until it ends, then
// tells every waiter so.
func (in *nsInit) read() {
	var err error
	for err == nil {
		var msg []byte
		fd := -1
		if msg, fd, err = in.w.receive(); err == nil {
			err = in.deliver(msg, fd)
		}
	}
	in.mu.Lock()
	in.err = fmt.Errorf("its init (pid %d) ended: %v", in.pid, err)
	close(in.done)
	in.mu.Unlock()
}

// deliver hands one answer to its waiter.
func (in *nsInit) deliver(msg []byte, fd int) error {
	word, nums, err := words(msg)
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case err != nil:
	case word == "pid" && len(nums) == 3 && nums[2] > 0 && fd >= 0 && in.starts[nums[0]] != nil:
		in.starts[nums[0]] <- started{nspid: nums[1], pid: nums[2], pidfd: fd}
		delete(in.starts, nums[0])
		return nil
	case word == "err" && len(nums) == 2 && in.starts[nums[0]] != nil:
		in.starts[nums[0]] <- started{errno: syscall.Errno(nums[1]), pidfd: -1}
		delete(in.starts, nums[0])
		return nil
	case word == "status" && len(nums) == 2 && in.reaps[nums[0]] != nil:
		in.reaps[nums[0]] <- syscall.WaitStatus(uint32(nums[1]))
		delete(in.reaps, nums[0])
		return nil
	}
	if fd >= 0 {
		unix.Close(fd)
	}
	if err == nil {
		err = fmt.Errorf("it said %q", msg)
	}
	return err
}

// ended reports whether the init has ended.
func (in *nsInit) ended() bool {
	select {
	case <-in.done:
		return true
	default:
		return false
	}
}

// close ends the init: the kernel kills what is left of its namespace.
func (in *nsInit) close() { in.w.shutdown() }

// start has the init start c, whose program is path, with out as its
// output, and returns the process once its program runs.
func (in *nsInit) start(c Cmd, path string, out *os.File) (*Process, error) {
	b := initSpec{Path: path, Argv: c.Argv, Dir: c.Dir, Env: c.Env}.encode()
	ch := make(chan started, 1)
	in.mu.Lock()
	in.nextID++
	id := in.nextID
	in.starts[id] = ch
	in.mu.Unlock()
	if err := in.request(id, b, out); err != nil {
		// The socket broke: the init has ended, or ends now, which its
		// reader sees next.
		<-in.done
	}
	var r started
	select {
	case r = <-ch:
	case <-in.done:
		return nil, &initEnded{err: in.err}
	}
	if r.pidfd < 0 {
		return nil, &os.PathError{Op: "start", Path: c.Argv[0], Err: r.errno}
	}
	return in.watch(c, r)
}

// request sends a start: its header with out, then the spec in chunks.
func (in *nsInit) request(id int, spec []byte, out *os.File) error {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	if in.closed {
		return errors.New("closed")
	}
	err := in.w.sendf(int(out.Fd()), "start %d %d", id, len(spec))
	runtime.KeepAlive(out)
	for len(spec) > 0 && err == nil {
		n := min(len(spec), chunk)
		err = in.w.send(spec[:n], -1)
		spec = spec[n:]
	}
	return err
}

// watch makes the Process of a plugin the init started.
func (in *nsInit) watch(c Cmd, r started) (*Process, error) {
	// r.pid is what the init read in the pidfd's fdinfo, in the
	// machine's /proc.
	pid := r.pid
	p, err := newProcess(pid, r.pidfd, c.Marker)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	p.ns, p.nspid = in, r.nspid
	registry.Lock()
	registry.pids[pid] = true
	registry.Unlock()
	return p, nil
}

// reap has the init reap the plugin of nspid, which has terminated, and
// returns its status. Without an answer the init died, and the namespace
// with it: the plugin was killed.
func (in *nsInit) reap(nspid int) syscall.WaitStatus {
	status := syscall.WaitStatus(uint32(syscall.SIGKILL))
	ch := make(chan syscall.WaitStatus, 1)
	in.mu.Lock()
	in.reaps[nspid] = ch
	in.mu.Unlock()
	in.wmu.Lock()
	err := errors.New("closed")
	if !in.closed {
		err = in.w.sendf(-1, "reap %d", nspid)
	}
	in.wmu.Unlock()
	if err == nil {
		select {
		case status = <-ch:
		case <-in.done:
		}
	}
	in.mu.Lock()
	delete(in.reaps, nspid)
	in.mu.Unlock()
	return status
}

// wait reaps the init, once it has ended.
func (in *nsInit) wait() {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(in.pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	forget(in.pid)
}
