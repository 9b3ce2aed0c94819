package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A Cmd with Isolate runs as the child of an init, this program run again
// (see runInit), which is pid 1 of a new PID namespace: when the init
// dies, the kernel kills every process of the namespace, and none can
// leave it. The init gets the Spawner thread's parent-death signal, so a
// host killed outright takes the whole family with it, daemons included.
// This process still sees the plugin by its real pid, signals it and its
// family directly, and watches it through a pidfd; only its exit status
// comes through the init, which holds the plugin unreaped until Reap.

// nsInit is the init of an isolated Process: this process's child.
type nsInit struct {
	pid     int
	ctl     *os.File // the control pipe: "reap", or its end
	report  *bufio.Reader
	rfile   *os.File
	waiting *sync.WaitGroup // its Spawner's inits being reaped in the background
}

// Isolation says whether the Spawner starts Cmds with Isolate in PID
// namespaces of their own, and why not. It tries once, at its first call:
// an init started and ended at once.
func (s *Spawner) Isolation() Isolation {
	s.isoOnce.Do(func() { s.iso = s.probe() })
	return s.iso
}

// probe starts an init without a spec, which exits at once, with the
// namespaces this process needs: a PID namespace, and a user namespace
// too unless it is root (a root process's plugins keep root's powers).
func (s *Spawner) probe() Isolation {
	user := os.Geteuid() != 0
	fail := func(err error) Isolation {
		return Isolation{User: user, Err: &NamespaceError{User: user, Err: err}}
	}
	if s.devnull == nil {
		return fail(fmt.Errorf("cannot open %s", os.DevNull))
	}
	type result struct {
		in  *nsInit
		err error
	}
	res := make(chan result, 1)
	select {
	case s.work <- func() { in, err := s.forkInit(user, nil); res <- result{in, err} }:
	case <-s.quit:
		return fail(errors.New("spawner closed"))
	}
	r := <-res
	if r.err != nil {
		return fail(r.err)
	}
	r.in.ctl.Close()
	ws := r.in.wait()
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fail(fmt.Errorf("its init (%s run again) ended with %s", os.Args[0], describe(ws)))
	}
	return Isolation{Namespace: true, User: user}
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + SignalName(ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// forkInit starts an init in new namespaces, from the Spawner's thread,
// with out (nil: /dev/null) as its output, and registers it. Its
// environment is graft's variables of env, which mark it as the plugin's
// (see Marked), and what its runtime needs.
func (s *Spawner) forkInit(user bool, c *Cmd) (*nsInit, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ctlR.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlW.Close()
		return nil, err
	}
	defer repW.Close()
	out := s.devnull
	env := []string{initEnv + "=" + initVersion, "GOMAXPROCS=1", "GORACE=atexit_sleep_ms=0"}
	if c != nil {
		if c.Output != nil {
			out = c.Output
		}
		for _, kv := range c.Env {
			if strings.HasPrefix(kv, "GRAFT_") {
				env = append(env, kv)
			}
		}
	}
	sys := &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWPID,
	}
	if user {
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	}
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{s.devnull.Fd(), out.Fd(), out.Fd(), ctlR.Fd(), repW.Fd()},
		Sys:   sys,
	}
	registry.Lock()
	pid, err := syscall.ForkExec("/proc/self/exe", []string{initArg0}, attr)
	if err == nil {
		registry.pids[pid] = true
	}
	registry.Unlock()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return nil, err
	}
	return &nsInit{pid: pid, ctl: ctlW, report: bufio.NewReader(repR), rfile: repR, waiting: &s.inits}, nil
}

// startIsolated starts c under an init in a PID namespace of its own and
// returns once c's program runs (or failed to start).
func (s *Spawner) startIsolated(c Cmd, path string, user bool) (*Process, error) {
	type result struct {
		in  *nsInit
		err error
	}
	res := make(chan result, 1)
	select {
	case s.work <- func() { in, err := s.forkInit(user, &c); res <- result{in, err} }:
	case <-s.quit:
		return nil, errors.New("start: spawner closed")
	}
	r := <-res
	if r.err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], &NamespaceError{User: user, Err: r.err})
	}
	in := r.in
	p, err := in.start(c, path)
	if err != nil {
		in.ctl.Close()
		in.wait()
		return nil, err
	}
	return p, nil
}

// start hands the init its spec and waits for its report: the plugin's
// pid in the namespace, found again by its real pid here, or why it could
// not run.
func (in *nsInit) start(c Cmd, path string) (*Process, error) {
	b, err := json.Marshal(initSpec{Path: path, Argv: c.Argv, Dir: c.Dir, Env: c.Env})
	if err != nil {
		return nil, err
	}
	if _, err := in.ctl.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("start %s: its init: %w", c.Argv[0], err)
	}
	kind, n, err := in.read()
	if err != nil {
		return nil, fmt.Errorf("start %s: its init: %w", c.Argv[0], err)
	}
	if kind == "err" {
		return nil, &os.PathError{Op: "start", Path: c.Argv[0], Err: syscall.Errno(n)}
	}
	pid, err := childByNSpid(in.pid, n)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	// The init holds the plugin unreaped until told: the pid is its.
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("start %s: pidfd_open %d: %w", c.Argv[0], pid, err)
	}
	p, err := newProcess(pid, fd, c.Marker)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	p.ns = in
	return p, nil
}

// read reads the init's next report, "pid N", "err ERRNO" or "status WS".
func (in *nsInit) read() (string, int, error) {
	line, err := in.report.ReadString('\n')
	if err != nil {
		return "", 0, errors.New("it ended without a word")
	}
	kind, num, _ := strings.Cut(strings.TrimSpace(line), " ")
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || (kind != "pid" && kind != "err" && kind != "status") {
		return "", 0, fmt.Errorf("it said %q", line)
	}
	return kind, int(n), nil
}

// reap has the init reap the plugin, which has terminated, and report its
// status; then the init exits, and the kernel kills what is left of the
// namespace. Without a report, the init died first, and the namespace
// with it: the plugin was killed.
func (in *nsInit) reap() syscall.WaitStatus {
	status := syscall.WaitStatus(uint32(syscall.SIGKILL))
	if _, err := in.ctl.Write([]byte("reap\n")); err == nil {
		if kind, n, err := in.read(); err == nil && kind == "status" {
			status = syscall.WaitStatus(n)
		}
	}
	// The init exits now, and the namespace with it, which takes the
	// kernel some milliseconds: the plugin is reaped already, so the
	// init is waited for in the background (Spawner.Close waits for it).
	in.ctl.Close()
	in.waiting.Add(1)
	go func() {
		defer in.waiting.Done()
		in.wait()
	}()
	return status
}

// wait reaps the init, which has been told to end, and closes its pipes.
func (in *nsInit) wait() syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(in.pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	e, seen := snapshotEntry(in.pid) // never under the registry's lock: see snapshot
	registry.Lock()
	delete(registry.pids, in.pid)
	if seen {
		registry.reaped[in.pid] = e.start
	}
	registry.Unlock()
	in.ctl.Close()
	in.rfile.Close()
	return ws
}

// childByNSpid finds the child of parent whose pid in its own namespace is
// nspid, and returns its pid here.
func childByNSpid(parent, nspid int) (int, error) {
	for _, c := range childrenOf(parent) {
		if innermostPid(c) == nspid {
			return c, nil
		}
	}
	return 0, fmt.Errorf("its init (pid %d) has no child of pid %d in its namespace", parent, nspid)
}

// childrenOf lists the children of pid, through the children file of each
// of its threads, else through the process table.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	var out []int
	found := false
	for _, task := range tasks {
		b, err := os.ReadFile(dir + task.Name() + "/children")
		if err != nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	if err == nil && found {
		return out
	}
	t, err := table() // a kernel without CONFIG_PROC_CHILDREN
	if err != nil {
		return nil
	}
	for _, e := range t {
		if e.ppid == pid {
			out = append(out, e.pid)
		}
	}
	return out
}

// innermostPid is pid's pid in its own PID namespace (the last of the
// NSpid line of its status), or 0.
func innermostPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}
