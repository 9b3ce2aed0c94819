package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The init of a PID namespace is this program run again (/proc/self/exe)
// with argv[0] initArg0 and initEnv=initVersion in its environment. Every
// program that links this package can be one: the package's init function
// turns it into the namespace's init before main runs.
const (
	initArg0    = "graft-init"
	initEnv     = "GRAFT_PROC_INIT"
	initVersion = "5"
	// The init's end of the socket pair (see nswire_linux.go).
	initCtlFD = 3
)

// initSpec is what the init starts: the plugin's program, resolved by
// the spawning process, with its arguments, directory and environment,
// and who it runs as (nil: as the init).
type initSpec struct {
	Path string
	Argv []string
	Dir  string
	Env  []string
	Cred *Cred
}

// encode writes the spec as its strings, each ended by a NUL (which no
// path, argument or variable can hold): the path, the directory, the
// credential (encodeCred), the number of arguments, the arguments, then
// the environment.
func (s initSpec) encode() []byte {
	cred := encodeCred(s.Cred)
	n := len(s.Path) + len(s.Dir) + len(cred) + 8
	for _, v := range s.Argv {
		n += len(v) + 1
	}
	for _, v := range s.Env {
		n += len(v) + 1
	}
	b := make([]byte, 0, n)
	b = append(append(b, s.Path...), 0)
	b = append(append(b, s.Dir...), 0)
	b = append(append(b, cred...), 0)
	b = append(strconv.AppendInt(b, int64(len(s.Argv)), 10), 0)
	for _, v := range s.Argv {
		b = append(append(b, v...), 0)
	}
	for _, v := range s.Env {
		b = append(append(b, v...), 0)
	}
	return b
}

// decodeSpec reads what encode wrote.
func decodeSpec(b []byte) (initSpec, error) {
	f := strings.Split(string(b), "\x00")
	if len(f) < 5 || f[len(f)-1] != "" {
		return initSpec{}, errors.New("a spec cut short")
	}
	f = f[:len(f)-1]
	cred, err := decodeCred(f[2])
	if err != nil {
		return initSpec{}, err
	}
	argc, err := strconv.Atoi(f[3])
	if err != nil || argc < 1 || 4+argc > len(f) {
		return initSpec{}, errors.New("a spec without its arguments")
	}
	return initSpec{Path: f[0], Dir: f[1], Cred: cred, Argv: f[4 : 4+argc], Env: f[4+argc:]}, nil
}

// encodeCred writes a credential as "UID GID GROUP,GROUP...", and none
// as "".
func encodeCred(c *Cred) string {
	if c == nil {
		return ""
	}
	groups := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = strconv.FormatUint(uint64(g), 10)
	}
	return fmt.Sprintf("%d %d %s", c.Uid, c.Gid, strings.Join(groups, ","))
}

// decodeCred reads what encodeCred wrote.
func decodeCred(s string) (*Cred, error) {
	if s == "" {
		return nil, nil
	}
	f := strings.Split(s, " ")
	if len(f) != 3 {
		return nil, errors.New("a spec with a bad credential")
	}
	var ids []uint32
	for _, v := range append(f[:2:2], strings.Split(f[2], ",")...) {
		if v == "" {
			continue
		}
		id, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, errors.New("a spec with a bad credential")
		}
		ids = append(ids, uint32(id))
	}
	if len(ids) < 2 {
		return nil, errors.New("a spec with a bad credential")
	}
	return &Cred{Uid: ids[0], Gid: ids[1], Groups: ids[2:]}, nil
}

func init() {
	if len(os.Args) == 1 && os.Args[0] == initArg0 && os.Getenv(initEnv) == initVersion {
		// Served from a goroutine of its own: the package's init runs
		// on a goroutine locked to the main thread, whose every wake-up
		// from a read would go through a hand-over of threads.
		code := make(chan int)
		go func() { code <- runInit() }()
		os.Exit(<-code)
	}
}

// request is a message of the spawning process, read whole.
type request struct {
	word string
	nums []int
	spec []byte // start: the spec
	out  int    // start: the plugin's output
}

// runInit is the init of a Spawner's PID namespace, pid 1 there. It starts
// the plugins it is asked to (each in a process group of its own), reports
// each one's pid once its program runs, reaps the orphans the namespace's
// processes leave, and keeps each plugin, once it has exited, a zombie
// until the spawning process says "reap", so that its pid and process
// group id name nothing else while its family is stopped. When it exits,
// the kernel kills whatever is left in the namespace; it exits when its
// socket ends: the spawning process closed it, or died. It also has that
// process's parent-death signal, SIGKILL.
func runInit() int {
	syscall.CloseOnExec(initCtlFD)
	w := newWire(initCtlFD)
	// As a namespace's init it gets only the signals it handles: none
	// from the plugins' families shall end it. They are caught and
	// dropped, not ignored, which the plugins would inherit.
	drop := make(chan os.Signal, 1)
	signal.Notify(drop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return 1
	}
	in := &initState{w: w, held: map[int]int{}}
	in.self, _ = strconv.Atoi(self)
	go func() {
		for {
			select {
			case <-chld:
				in.mu.Lock()
				in.reapOrphans()
				in.mu.Unlock()
				// A look at the orphans reads the whole list of the
				// init's children. Exits come in bursts (whole families
				// stopped): one look after orphanPause serves a burst,
				// whose signals wait meanwhile as one, instead of a look
				// for each exit. An orphan stays a zombie that long.
				time.Sleep(orphanPause)
			case <-drop:
			}
		}
	}()
	if w.sendf(-1, "ready") != nil {
		return 0
	}
	// The requests are read and served here, one after another: this
	// goroutine waits in recvmsg, which wakes it sooner than a channel
	// from another would.
	for {
		r, err := readRequest(w)
		if err != nil {
			return 0 // the spawning process is gone, or said nonsense
		}
		in.mu.Lock()
		in.serve(r)
		in.mu.Unlock()
	}
}

// initState is what the init keeps: its socket, its pid on the machine,
// and its plugins not yet reaped, by their pid in the namespace.
type initState struct {
	w    *wire
	self int

	mu   sync.Mutex  // serving a request, or reaping orphans
	held map[int]int // pid here → pid on the machine (0 until known)
}

// readRequest reads a request: "start ID LEN", a newline and the first
// bytes of its spec, with the plugin's output, then the rest of the LEN
// bytes of the spec in the messages after it; or "reap NSPID".
func readRequest(w *wire) (request, error) {
	msg, fd, err := w.receive()
	if err != nil {
		return request{}, err
	}
	head, first, _ := bytes.Cut(msg, []byte("\n"))
	word, nums, err := words(head)
	switch {
	case err == nil && word == "reap" && len(nums) == 1 && fd < 0:
		return request{word: word, nums: nums, out: -1}, nil
	case err == nil && word == "start" && len(nums) == 2 && fd >= 0 && len(first) <= nums[1]:
		r := request{word: word, nums: nums[:1], out: fd, spec: append(make([]byte, 0, nums[1]), first...)}
		for len(r.spec) < nums[1] {
			part, extra, err := w.receive()
			if extra >= 0 {
				unix.Close(extra)
			}
			if err == nil && len(r.spec)+len(part) > nums[1] {
				err = fmt.Errorf("a spec longer than its %d bytes", nums[1])
			}
			if err != nil {
				unix.Close(fd)
				return request{}, err
			}
			r.spec = append(r.spec, part...)
		}
		return r, nil
	}
	if fd >= 0 {
		unix.Close(fd)
	}
	return request{}, fmt.Errorf("a request %q", head)
}

// serve carries out a request.
func (in *initState) serve(r request) {
	switch r.word {
	case "start":
		in.start(r.nums[0], r.spec, r.out)
	case "reap":
		nspid := r.nums[0]
		if _, ok := in.held[nspid]; !ok {
			in.w.sendf(-1, "status %d %d", nspid, uint32(syscall.SIGKILL))
			return
		}
		ws := reap(nspid)
		delete(in.held, nspid)
		in.w.sendf(-1, "status %d %d", nspid, uint32(ws))
	}
}

// start starts the plugin of spec in a process group of its own, with
// stdin the init's own (/dev/null) and out as stdout and stderr, and
// reports "pid ID NSPID PID" (its pid here, and on the machine) with a pidfd of it once its program runs, or
// "err ID ERRNO".
func (in *initState) start(id int, b []byte, out int) {
	defer unix.Close(out) // the plugin's now, not the init's
	spec, err := decodeSpec(b)
	if err != nil {
		in.w.sendf(-1, "err %d %d", id, syscall.EINVAL)
		return
	}
	pidfd := -1
	pid, err := syscall.ForkExec(spec.Path, spec.Argv, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{0, uintptr(out), uintptr(out)},
		Sys:   &syscall.SysProcAttr{Setpgid: true, PidFD: &pidfd, Credential: spec.Cred.sys()},
	})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		in.w.sendf(-1, "err %d %d", id, errno)
		return
	}
	defer unix.Close(pidfd)
	// The answer goes first: the spawning process reads the pid on the
	// machine from the pidfd itself. The init's own reading of it, for
	// reapOrphans, is out of the start's way; while unknown (0), the
	// plugin is told from an orphan by its pid here.
	in.held[pid] = 0
	in.w.sendf(pidfd, "pid %d %d", id, pid)
	if host, err := pidfdPid(pidfd); err == nil {
		in.held[pid] = host
	}
}

// isHeld reports whether nspid is a plugin's, not an orphan's.
func (in *initState) isHeld(nspid int) bool {
	_, ok := in.held[nspid]
	return ok
}

// reap waits for pid, through any EINTR, and returns its status.
func reap(pid int) syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws
		}
	}
}

// orphanPause is the least time between two looks for orphans to reap.
const orphanPause = 10 * time.Millisecond

// reapOrphans reaps the terminated children of the init that are not its
// plugins: the orphans of the namespace. Its children are listed by their
// pids on the machine (its /proc is the machine's), and waited for by
// their pids here.
func (in *initState) reapOrphans() {
	plugins := make(map[int]bool, len(in.held))
	for _, pid := range in.held {
		plugins[pid] = true
	}
	for _, c := range childrenOf(in.self) {
		if plugins[c] {
			continue
		}
		if nspid := innermostPid(c); nspid > 0 && !in.isHeld(nspid) {
			var ws syscall.WaitStatus
			syscall.Wait4(nspid, &ws, syscall.WNOHANG, nil)
		}
	}
}
