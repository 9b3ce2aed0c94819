package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nsInit is the init of a Spawner's namespace, seen from the Spawner's
// process, whose child it is.
//
// Its answers are read by the goroutines that wait for them, one at a
// time: the one holding rmu reads, hands on each answer that is another's,
// and stops at its own; it then gives the next waiter its turn. The
// thread the kernel wakes with an answer is thus, most often, the one
// that waits for it, and no goroutine stays blocked in a read between
// starts (which would keep the runtime's monitor polling).
type nsInit struct {
	pid  int      // on the machine
	proc *Process // the init, watched through a pidfd
	w    *wire
	wmu  sync.Mutex // one request, all its messages, at a time
	// closed is set, under wmu, once its socket is closed: no request
	// may write to a descriptor that may name another file by then.
	closed bool

	rmu  sync.Mutex    // held by the goroutine reading the socket
	turn chan struct{} // wakes a waiter to read, once rmu is free

	mu     sync.Mutex
	nextID int
	starts map[int]chan started            // by request
	reaps  map[int]chan syscall.WaitStatus // by pid in the namespace
	err    error                           // why it ended
	done   chan struct{}                   // closed when it has ended

	// terms: it takes "term NSPID MS" (Process.SetTerm), which an init
	// of an earlier graft, kept across an upgrade, may not.
	terms bool
}

// initEnded is the error of a start the init could not answer: it ended,
// and with it its namespace, the plugin included if it had started it.
type initEnded struct{ err error }

func (e *initEnded) Error() string { return e.err.Error() }
func (e *initEnded) Unwrap() error { return e.err }

// started is the init's answer to a start: the plugin's pid in the
// namespace and a pidfd of it, or the errno of its failure.
type started struct {
	nspid, pidfd int
	errno        syscall.Errno
}

// startInit waits for the init of pid (and pidfd) to say it runs, and
// watches it: once it has exited, the answers it sent are handed on, and
// it is reaped (waiting, for Spawner.Close).
func startInit(pid, pidfd int, w *wire, waiting *sync.WaitGroup) (*nsInit, error) {
	proc, err := newProcess(pid, pidfd, "")
	if err != nil {
		w.close()
		syscall.Kill(pid, syscall.SIGKILL)
		reap(pid)
		forget(pid)
		return nil, err
	}
	in := newNsInit(pid, proc, w)
	in.terms = true // this graft's own
	msg, fd, err := w.receive()
	if fd >= 0 {
		unix.Close(fd)
	}
	if err == nil && string(msg) != "ready" {
		err = fmt.Errorf("it said %q", msg)
	}
	if err != nil {
		proc.Signal(syscall.SIGKILL)
	}
	in.watchInit(waiting)
	if err != nil {
		return nil, fmt.Errorf("its init (%s run again) did not start: %v", os.Args[0], err)
	}
	return in, nil
}

// newNsInit is the init of pid, watched through proc, on w.
func newNsInit(pid int, proc *Process, w *wire) *nsInit {
	return &nsInit{pid: pid, proc: proc, w: w, turn: make(chan struct{}, 1),
		starts: map[int]chan started{}, reaps: map[int]chan syscall.WaitStatus{}, done: make(chan struct{})}
}

// watchInit hands on, once the init has exited, the answers it sent,
// and reaps it if it is this process's child (waiting, for
// Spawner.Close): an init adopted after a crash is not.
func (in *nsInit) watchInit(waiting *sync.WaitGroup) {
	waiting.Add(1)
	go func() {
		defer waiting.Done()
		<-in.proc.Exited()
		in.rmu.Lock()
		for !in.ended() {
			in.readOne()
		}
		in.rmu.Unlock()
		in.passTurn()
		if _, err := in.proc.Reap(); err != nil {
			in.proc.pidfd.Close()
			forget(in.pid)
		}
	}()
}

// await returns what ch receives: the answer to a request of the caller's,
// which it reads itself when no other goroutine is reading; or false if
// the init ended first.
func await[T any](in *nsInit, ch <-chan T) (T, bool) {
	for {
		if in.rmu.TryLock() {
			v, ok := readFor(in, ch)
			in.rmu.Unlock()
			in.passTurn()
			return v, ok
		}
		select {
		case v := <-ch:
			return v, true
		case <-in.done:
			return answered(ch)
		case <-in.turn:
		}
	}
}

// readFor reads, under rmu, until ch has its answer or the init has ended.
func readFor[T any](in *nsInit, ch <-chan T) (T, bool) {
	for {
		select {
		case v := <-ch:
			return v, true
		default:
		}
		if in.ended() {
			return answered(ch)
		}
		in.readOne()
	}
}

// answered is an answer already in ch, once the init has ended.
func answered[T any](ch <-chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

// passTurn wakes one goroutine waiting for its answer, if any, to read.
func (in *nsInit) passTurn() {
	select {
	case in.turn <- struct{}{}:
	default:
	}
}

// readOne reads one message, under rmu, and hands it to its waiter; if
// the socket ended or the init said nonsense, it ends the connection.
func (in *nsInit) readOne() {
	msg, fd, err := in.w.receive()
	if err == nil {
		err = in.deliver(msg, fd)
	}
	if err != nil {
		in.end(err)
	}
}

// end records that the init has ended, tells every waiter so, and closes
// the socket: an init still running reads its end and exits. It runs
// under rmu, so that no read is under way.
func (in *nsInit) end(err error) {
	in.mu.Lock()
	in.err = fmt.Errorf("its init (pid %d) ended: %v", in.pid, err)
	close(in.done)
	in.mu.Unlock()
	in.wmu.Lock()
	in.closed = true
	in.w.close()
	in.wmu.Unlock()
}

// deliver hands one answer to its waiter.
func (in *nsInit) deliver(msg []byte, fd int) error {
	word, nums, err := words(msg)
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case err != nil:
	case word == "pid" && len(nums) == 2 && fd >= 0 && in.starts[nums[0]] != nil:
		in.starts[nums[0]] <- started{nspid: nums[1], pidfd: fd}
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
// It takes no lock: a request blocked on a full socket returns with it.
// The socket is the poller's file, which keeps its descriptor from
// naming another file while the shutdown runs, and turns the shutdown
// into nothing once closed.
func (in *nsInit) close() { in.w.shutdown() }

// start has the init start c, whose program is path, with out as its
// output, and returns the process once its program runs.
func (in *nsInit) start(c Cmd, path string, out *os.File) (*Process, error) {
	b := initSpec{Path: path, Argv: c.Argv, Dir: c.Dir, Env: c.Env, Cred: c.Cred,
		held: held{Marker: c.Marker, Tag: c.Tag, Hold: c.Hold, StopSignal: c.StopSignal, StopTimeout: c.StopTimeout}}.encode()
	ch := make(chan started, 1)
	in.mu.Lock()
	in.nextID++
	id := in.nextID
	in.starts[id] = ch
	in.mu.Unlock()
	in.send(func() error { return in.request(id, b, out, c.Reader, c.Files) })
	r, ok := await(in, ch)
	if !ok {
		return nil, &initEnded{err: in.err}
	}
	if r.pidfd < 0 {
		return nil, c.startError(r.errno)
	}
	return in.watch(c, r)
}

// send sends a request under wmu. If the socket broke, the init has
// ended or ends now: the socket is shut down, so that the read of its
// answer finds the end instead of waiting for what never comes.
func (in *nsInit) send(request func() error) {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	if in.closed {
		return
	}
	if err := request(); err != nil {
		in.w.shutdown()
	}
}

// request sends a start: its header, a newline and as much of the spec
// as a message holds (most often all of it), with out; then the rest of
// the spec in chunks.
func (in *nsInit) request(id int, spec []byte, out, reader *os.File, files []*os.File) error {
	n := min(len(spec), chunk)
	keep := -1
	if reader != nil {
		keep = int(reader.Fd())
	}
	// Without held sockets, the request an init of an earlier graft, kept
	// across an upgrade, reads too.
	head := fmt.Appendf(make([]byte, 0, 32+n), "start %d %d", id, len(spec))
	fds := []int{int(out.Fd()), keep}
	if len(files) > 0 {
		head = fmt.Appendf(head, " %d %d", boolNum(reader != nil), len(files))
		for _, f := range files {
			fds = append(fds, FD(f))
		}
	}
	msg := append(append(head, '\n'), spec[:n]...)
	err := in.w.send(msg, fds...)
	runtime.KeepAlive(out)
	runtime.KeepAlive(reader)
	runtime.KeepAlive(files)
	for spec = spec[n:]; len(spec) > 0 && err == nil; spec = spec[n:] {
		n = min(len(spec), chunk)
		err = in.w.send(spec[:n], -1)
	}
	return err
}

// watch makes the Process of a plugin the init started.
func (in *nsInit) watch(c Cmd, r started) (*Process, error) {
	// Its pid here (the machine's, or that of this process's namespace),
	// which the init does not know.
	pid, err := pidOfPidfd(r.pidfd)
	if err != nil {
		unix.PidfdSendSignal(r.pidfd, syscall.SIGKILL, nil, 0)
		unix.Close(r.pidfd)
		in.reap(r.nspid)
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
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
	ch := make(chan syscall.WaitStatus, 1)
	in.mu.Lock()
	in.reaps[nspid] = ch
	in.mu.Unlock()
	in.send(func() error { return in.w.sendf(-1, "reap %d", nspid) })
	status, ok := await(in, ch)
	if !ok {
		status = syscall.WaitStatus(uint32(syscall.SIGKILL))
	}
	in.mu.Lock()
	delete(in.reaps, nspid)
	in.mu.Unlock()
	return status
}

// termsSince is the first init version that takes "term".
const termsSince = 7

// takesTerms reports whether the init of pid, which this process did not
// start, takes "term": its version, in its environment, is termsSince or
// later.
func takesTerms(pid int) bool {
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, initEnv+"="); ok {
			n, err := strconv.Atoi(v)
			return err == nil && n >= termsSince
		}
	}
	return false
}

// setTerm has the init stop the plugin of nspid in d, unless told again
// first; d of 0 ends its term (initState.setTerm).
func (in *nsInit) setTerm(nspid int, d time.Duration) error {
	if !in.terms {
		return errors.New("its init, of an earlier graft, cannot end its term: the next start of the host's namespace can")
	}
	ms := max(d.Milliseconds(), 1)
	if d == 0 {
		ms = 0
	}
	var err error
	in.send(func() error {
		err = in.w.sendf(-1, "term %d %d", nspid, ms)
		return err
	})
	return err
}
