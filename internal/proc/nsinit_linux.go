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
	"unsafe"

	"golang.org/x/sys/unix"
)

// The init of a PID namespace is this program run again (/proc/self/exe)
// with argv[0] initArg0 and initEnv=initVersion in its environment. Every
// program that links this package can be one: the package's init function
// turns it into the namespace's init before main runs.
const (
	initArg0    = "graft-init"
	initEnv     = "GRAFT_PROC_INIT"
	initVersion = "7" // termsSince: "term NSPID MS"
	// The init's end of the socket pair (see nswire_linux.go).
	initCtlFD = 3
	// With initHandoverEnv=1 in its environment, the init also has the
	// attach socket it listens on once its host is gone, and the file it
	// records there the stops it makes on its own (nshold_linux.go).
	initHandoverEnv = "GRAFT_PROC_INIT_HANDOVER"
	initListenFD    = 4
	initRecordFD    = 5
)

// initSpec is what the init starts: the plugin's program, resolved by
// the spawning process, with its arguments, directory and environment,
// and who it runs as (nil: as the init); and what the init keeps of it
// for a host to come, once its own is gone (nshold_linux.go): its tag,
// whether it is kept for the next host, and its stop signal and timeout.
type initSpec struct {
	Path string
	Argv []string
	Dir  string
	Env  []string
	Cred *Cred
	held
}

// held is what the init keeps of a plugin for the next host.
type held struct {
	Marker      string // Cmd.Marker
	Tag         string
	Hold        bool
	StopSignal  syscall.Signal
	StopTimeout time.Duration
}

// encode writes the spec as its strings, each ended by a NUL (which no
// path, argument or variable can hold): the path, the directory, the
// credential (encodeCred), the marker, the tag, "HOLD SIGNAL TIMEOUT-MS", the number
// of arguments, the arguments, then the environment.
func (s initSpec) encode() []byte {
	cred := encodeCred(s.Cred)
	keep := fmt.Sprintf("%d %d %d", boolNum(s.Hold), s.StopSignal, s.StopTimeout.Milliseconds())
	n := len(s.Path) + len(s.Dir) + len(cred) + len(s.Marker) + len(s.Tag) + len(keep) + 8
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
	b = append(append(b, s.Marker...), 0)
	b = append(append(b, s.Tag...), 0)
	b = append(append(b, keep...), 0)
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
	if len(f) < 8 || f[len(f)-1] != "" {
		return initSpec{}, errors.New("a spec cut short")
	}
	f = f[:len(f)-1]
	cred, err := decodeCred(f[2])
	if err != nil {
		return initSpec{}, err
	}
	h := held{Marker: f[3], Tag: f[4]}
	var hold, sig, ms int
	if _, err := fmt.Sscanf(f[5], "%d %d %d", &hold, &sig, &ms); err != nil {
		return initSpec{}, errors.New("a spec with a bad stop")
	}
	h.Hold, h.StopSignal, h.StopTimeout = hold == 1, syscall.Signal(sig), time.Duration(ms)*time.Millisecond
	argc, err := strconv.Atoi(f[6])
	if err != nil || argc < 1 || 7+argc > len(f) {
		return initSpec{}, errors.New("a spec without its arguments")
	}
	return initSpec{Path: f[0], Dir: f[1], Cred: cred, held: h, Argv: f[7 : 7+argc], Env: f[7+argc:]}, nil
}

// boolNum is 1 for true, 0 for false.
func boolNum(b bool) int {
	if b {
		return 1
	}
	return 0
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
	keep int    // start: its pipe's read end, or -1
	// files are a start's held sockets, the plugin's descriptors 3 and on.
	files []int
}

// runInit is the init of a Spawner's PID namespace, pid 1 there. It starts
// the plugins it is asked to (each in a process group of its own), reports
// each one's pid once its program runs, reaps the orphans the namespace's
// processes leave, and keeps each plugin, once it has exited, a zombie
// until the spawning process says "reap", so that its pid and process
// group id name nothing else while its family is stopped. When it exits,
// the kernel kills whatever is left in the namespace. It exits when its
// host says "quit", or its socket ends (the host closed it, or died) and
// it was not asked to hold its plugins; asked to, it keeps them for the
// next host (awaitHost, nshold_linux.go).
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
	in := &initState{w: w, held: map[int]*heldPlugin{}, hosts: map[int]bool{}, listen: -1, record: -1}
	if os.Getenv(initHandoverEnv) == "1" {
		syscall.CloseOnExec(initListenFD)
		syscall.CloseOnExec(initRecordFD)
		in.listen, in.record = initListenFD, initRecordFD
	}
	in.self, _ = strconv.Atoi(self)
	own := []int{initCtlFD}
	if in.listen >= 0 {
		own = append(own, in.listen, in.record)
	}
	in.keeper, _ = startKeeper(own...)
	go func() {
		for {
			select {
			case <-chld:
				// Exits come in bursts (whole families stopped): one
				// look orphanPause after the first serves a burst,
				// whose signals wait meanwhile as one, instead of a
				// look for each exit. And most exits are a plugin's,
				// whose host asks at once to reap it: the look waits
				// until that is done. A look that finds a plugin's
				// exit still held, which hides the rest from waitid,
				// is made again after another pause, then whole (see
				// reapOrphans). An orphan stays a zombie that long.
				for whole := false; ; whole = true {
					time.Sleep(orphanPause)
					if in.reapOrphans(whole) {
						break
					}
				}
			case <-drop:
			}
		}
	}()
	if w.sendf(-1, "ready") != nil {
		return 0
	}
	for {
		if in.serveHost() {
			return 0 // quit
		}
		in.w.close()
		if in.w = in.awaitHost(); in.w == nil {
			return 0
		}
	}
}

// serveHost serves the host's requests until its socket ends (false) or it
// says quit (true). The requests are read and served here, one after
// another: this goroutine waits in recvmsg, which wakes it sooner than a
// channel from another would.
func (in *initState) serveHost() bool {
	for {
		r, err := readRequest(in.w)
		if err != nil {
			return false // the host is gone, or said nonsense
		}
		if r.word == "quit" {
			return true
		}
		in.mu.Lock()
		in.serve(r)
		in.mu.Unlock()
	}
}

// initState is what the init keeps: its socket, its pid on the machine,
// its plugins not yet reaped, by their pid in the namespace, and what it
// does once its host is gone.
type initState struct {
	w    *wire
	self int

	mu   sync.Mutex // serving a request, or reaping orphans
	held map[int]*heldPlugin
	// hosts are the pids on the machine of the plugins held, once known.
	hosts map[int]bool

	// window is how long the plugins are kept for the next host once the
	// host is gone (0: not at all); all keeps those without Hold too.
	window time.Duration
	all    bool
	// listen is the attach socket, record the file of the stops made
	// with no host; -1 without.
	listen, record int
	gone           time.Time // when the last host was gone
	// keeper holds the plugins' read ends (nskeep_linux.go); nil: the
	// init holds them itself.
	keeper *keeper
}

// heldPlugin is a plugin of the init's, until it is reaped.
type heldPlugin struct {
	held
	host int  // its pid on the machine; 0 until known
	keep int  // the read end of its output pipe, or -1
	kept bool // the read end is the keeper's
	// term, when set, stops the plugin at the end of its term, unless
	// the host extends it first ("term NSPID MS").
	term *time.Timer
}

// readRequest reads a request: "start ID LEN", a newline and the first
// bytes of its spec, with the plugin's output (and its pipe's read end),
// then the rest of the LEN bytes of the spec in the messages after it;
// "reap NSPID"; "hold MS ALL"; or "quit".
func readRequest(w *wire) (request, error) {
	msg, fds, err := w.receiveFDs()
	if err != nil {
		return request{}, err
	}
	head, first, _ := bytes.Cut(msg, []byte("\n"))
	word, nums, err := words(head)
	switch {
	case err == nil && word == "reap" && len(nums) == 1 && len(fds) == 0,
		err == nil && word == "hold" && len(nums) == 2 && len(fds) == 0,
		err == nil && word == "term" && len(nums) == 2 && len(fds) == 0,
		err == nil && word == "quit" && len(nums) == 0 && len(fds) == 0:
		return request{word: word, nums: nums, out: -1, keep: -1}, nil
	case err == nil && word == "start" && len(nums) == 2 && len(fds) >= 1 && len(fds) <= 2 && len(first) <= nums[1],
		// "start ID LEN KEEP FILES": with held sockets, after the read end
		// when KEEP is 1.
		err == nil && word == "start" && len(nums) == 4 && len(fds) == 1+nums[2]+nums[3] && nums[2] <= 1 && len(first) <= nums[1]:
		r := request{word: word, nums: nums[:1], out: fds[0], keep: -1, spec: append(make([]byte, 0, nums[1]), first...)}
		if len(nums) == 2 && len(fds) > 1 || len(nums) == 4 && nums[2] == 1 {
			r.keep = fds[1]
		}
		if len(nums) == 4 {
			r.files = fds[1+nums[2]:]
		}
		for len(r.spec) < nums[1] {
			part, extra, err := w.receive()
			if extra >= 0 {
				unix.Close(extra)
			}
			if err == nil && len(r.spec)+len(part) > nums[1] {
				err = fmt.Errorf("a spec longer than its %d bytes", nums[1])
			}
			if err != nil {
				closeAll(fds) // the read end and the files among them
				return request{}, err
			}
			r.spec = append(r.spec, part...)
		}
		return r, nil
	}
	closeAll(fds)
	return request{}, fmt.Errorf("a request %q", head)
}

// serve carries out a request.
func (in *initState) serve(r request) {
	switch r.word {
	case "start":
		in.start(r.nums[0], r.spec, r.out, r.keep, r.files)
	case "reap":
		nspid := r.nums[0]
		h, ok := in.held[nspid]
		if !ok {
			in.w.sendf(-1, "status %d %d", nspid, uint32(syscall.SIGKILL))
			return
		}
		ws := reap(nspid)
		in.forget(nspid, h)
		in.w.sendf(-1, "status %d %d", nspid, uint32(ws))
	case "hold":
		in.window, in.all = time.Duration(max(r.nums[0], 0))*time.Millisecond, r.nums[1] == 1
	case "term":
		in.setTerm(r.nums[0], time.Duration(r.nums[1])*time.Millisecond)
	}
}

// setTerm has the plugin of nspid stopped in d unless the host sets its
// term again first; a d of 0 ends the term: no stop. It is how a
// floating leader's plugin is stopped in time while its host cannot run
// (frozen, stalled): the init runs on (docs/semantics.md, "Floating
// plugins: the election"). The host holds in.mu.
func (in *initState) setTerm(nspid int, d time.Duration) {
	h := in.held[nspid]
	if h == nil {
		return
	}
	if h.term != nil {
		h.term.Stop()
		h.term = nil
	}
	if d <= 0 {
		return
	}
	h.term = time.AfterFunc(d, func() { in.endTerm(nspid, h) })
}

// endTerm stops the plugin of nspid, held as h, whose term ran out: its
// stop signal to its group, then, after its stop timeout, SIGKILL to the
// group and every member of its family. Its host reaps it, as any
// plugin's, once it runs again.
func (in *initState) endTerm(nspid int, h *heldPlugin) {
	in.mu.Lock()
	held := in.held[nspid] == h
	in.mu.Unlock()
	if !held {
		return
	}
	sig := h.StopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	syscall.Kill(-nspid, sig)
	for end := time.Now().Add(h.StopTimeout); time.Now().Before(end); time.Sleep(orphanPause) {
		if exited(nspid) {
			break
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.held[nspid] != h {
		return // reaped meanwhile
	}
	killFamily(nspid, h)
}

// killFamily sends SIGKILL to the plugin of nspid, held as h, its group
// and every member of its family (by its marker), as the kernel would
// kill the namespace.
func killFamily(nspid int, h *heldPlugin) {
	syscall.Kill(-nspid, syscall.SIGKILL)
	if h.Marker == "" {
		return
	}
	members, _ := Marked([]string{h.Marker})
	for _, m := range members {
		// Found by the machine's pids (the init's /proc is the
		// machine's); signalled by their pids here.
		if p := innermostPid(m.Pid); p > 1 {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// forget drops a reaped plugin.
func (in *initState) forget(nspid int, h *heldPlugin) {
	if h.keep >= 0 {
		unix.Close(h.keep)
	}
	if h.kept {
		in.keeper.drop(nspid)
	}
	if h.term != nil {
		h.term.Stop()
	}
	delete(in.held, nspid)
	delete(in.hosts, h.host)
}

// start starts the plugin of spec in a process group of its own, with
// stdin the init's own (/dev/null) and out as stdout and stderr, keeps
// keep (its pipe's read end, if any) while it lives, and reports "pid ID
// NSPID" with a pidfd of it once its program runs, or "err ID ERRNO".
func (in *initState) start(id int, b []byte, out, keep int, files []int) {
	defer unix.Close(out) // the plugin's now, not the init's
	defer closeAll(files)
	spec, err := decodeSpec(b)
	if err != nil {
		if keep >= 0 {
			unix.Close(keep)
		}
		in.w.sendf(-1, "err %d %d", id, syscall.EINVAL)
		return
	}
	pidfd := -1
	pid, err := syscall.ForkExec(spec.Path, spec.Argv, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: append([]uintptr{0, uintptr(out), uintptr(out)}, fdsOf(files)...),
		Sys:   &syscall.SysProcAttr{Setpgid: true, PidFD: &pidfd, Credential: spec.Cred.sys()},
	})
	if err != nil {
		if keep >= 0 {
			unix.Close(keep)
		}
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
	h := &heldPlugin{held: spec.held, keep: keep}
	in.held[pid] = h
	in.w.sendf(pidfd, "pid %d %d", id, pid)
	if host, err := pidfdPid(pidfd); err == nil {
		h.host = host
		in.hosts[host] = true
	}
	if keep >= 0 && in.keeper != nil {
		in.keeper.put(pid, keep)
		h.keep, h.kept = -1, true
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
// plugins: the orphans of the namespace, and reports whether it looked at
// them all. It asks waitid first (reapZombies); when a plugin's exit,
// held for its host, hides the rest, it reports false, unless whole:
// then it lists the init's children, which takes a third of a
// millisecond with a thousand plugins. They are listed by their pids on
// the machine (its /proc is the machine's), and waited for by their pids
// here. The list is read without in.mu, so that the host's requests are
// not held up meanwhile; each orphan is told from a plugin, and waited
// for, under it.
func (in *initState) reapOrphans(whole bool) bool {
	if in.reapZombies() {
		return true
	}
	if !whole {
		return false // the host reaps its plugin meanwhile, most often
	}
	children := childrenOf(in.self)
	in.mu.Lock()
	var orphans []int
	for _, c := range children {
		if !in.hosts[c] {
			orphans = append(orphans, c)
		}
	}
	in.mu.Unlock()
	for _, c := range orphans {
		nspid := innermostPid(c)
		if nspid <= 0 {
			continue
		}
		in.mu.Lock()
		if !in.isHeld(nspid) {
			var ws syscall.WaitStatus
			syscall.Wait4(nspid, &ws, syscall.WNOHANG, nil)
		}
		in.mu.Unlock()
	}
	return true
}

// reapZombies reaps the terminated orphans of the init one by one, as
// waitid finds them, and reports true once no child is left terminated:
// most often at once, since an exit is most often a plugin's, which its
// host had the init reap before this look. It reports false when it finds
// a plugin's exit (not yet reaped, as its host has it dealt with first),
// which hides any orphan's behind it.
func (in *initState) reapZombies() bool {
	return reapTerminatedBut(&in.mu, in.isHeld)
}

// siginfoPid is the si_pid of a SIGCHLD's siginfo: the first field of its
// union, after three ints and the padding to a pointer's alignment.
func siginfoPid(info *unix.Siginfo) int {
	const off = (12 + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// fdsOf is fds as ProcAttr.Files takes them.
func fdsOf(fds []int) []uintptr {
	out := make([]uintptr, len(fds))
	for i, fd := range fds {
		out[i] = uintptr(fd)
	}
	return out
}
