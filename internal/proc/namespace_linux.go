package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// A Cmd with Isolate runs in the PID namespace of its Spawner, as a child
// of the namespace's init, this program run again (see runInit), which is
// pid 1 there. The namespace is made once, at the first such start, and
// serves every later one: when the init dies, the kernel kills every
// process of the namespace, and none can leave it. The init ends when its
// socket to this process does, so a host killed outright takes every
// plugin's whole family with it, daemons included; unless the host told
// it to hold them for the next host (nshold_linux.go). This process
// still sees each plugin by its real pid, signals it and its family
// directly, and watches it through a pidfd the init passes on; only its
// exit status comes through the init, which holds it unreaped until Reap.
// (docs/stopping.md, "When the host dies".)

// Isolation says whether the Spawner starts Cmds with Isolate in its PID
// namespace, and why not. It tries once, at its first call: it starts the
// namespace's init, which then stays.
func (s *Spawner) Isolation() Isolation {
	s.isoOnce.Do(func() {
		user := os.Geteuid() != 0
		s.iso = Isolation{Namespace: true, User: user}
		if _, err := s.namespace(); err != nil {
			s.iso = Isolation{User: user, Err: err}
		}
	})
	return s.iso
}

// namespace returns the init of the Spawner's namespace, and starts one
// when there is none, or the last one died (and with it every plugin it
// held): a PID namespace, and a user namespace too unless this process is
// root (a root process's plugins keep root's powers).
func (s *Spawner) namespace() (*nsInit, error) {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	if s.ns != nil && !s.ns.ended() {
		return s.ns, nil
	}
	user := os.Geteuid() != 0
	if s.devnull == nil {
		return nil, &NamespaceError{User: user, Err: fmt.Errorf("cannot open %s", os.DevNull)}
	}
	type result struct {
		in  *nsInit
		err error
	}
	res := make(chan result, 1)
	select {
	case s.work <- func() { in, err := s.forkInit(user, s.handover); res <- result{in, err} }:
	case <-s.quit:
		return nil, errors.New("spawner closed")
	}
	r := <-res
	if r.err == nil && s.window > 0 {
		if err := r.in.hold(s.window, s.all); err != nil {
			r.in.close()
			r.err = err
		}
	}
	if r.err != nil {
		return nil, &NamespaceError{User: user, Err: r.err}
	}
	s.ns = r.in
	r.in.track()
	return r.in, nil
}

// forkInit starts an init in new namespaces, from the Spawner's thread,
// registers it, and returns once it runs. Its environment is what its
// runtime needs, and its output /dev/null; with a handover, it gets its
// attach socket and record file too. It has no parent-death signal: it
// ends when its socket does (this process closed it, or is gone), unless
// told to hold its plugins for the next host, and a thread's end (which
// an exec of this process is, for all but one) must not kill it.
func (s *Spawner) forkInit(user bool, handover Handover) (*nsInit, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	theirs := os.NewFile(uintptr(fds[1]), "init")
	defer theirs.Close()
	ours, err := newPolledWire(fds[0])
	if err != nil {
		return nil, err
	}
	pidfd := -1
	sys := &syscall.SysProcAttr{
		Setpgid:    true,
		Cloneflags: syscall.CLONE_NEWPID,
		PidFD:      &pidfd,
	}
	if user {
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	}
	attr := &syscall.ProcAttr{
		Env:   []string{initEnv + "=" + initVersion, "GORACE=atexit_sleep_ms=0"},
		Files: []uintptr{s.devnull.Fd(), s.devnull.Fd(), s.devnull.Fd(), theirs.Fd()},
		Sys:   sys,
	}
	if handover.Socket != "" {
		sock, record, err := listener(handover)
		if err != nil {
			ours.close()
			return nil, err
		}
		defer sock.Close() // the init's alone
		defer record.Close()
		attr.Env = append(attr.Env, initHandoverEnv+"=1")
		attr.Files = append(attr.Files, sock.Fd(), record.Fd())
	}
	registry.Lock()
	pid, err := syscall.ForkExec("/proc/self/exe", []string{initArg0}, attr)
	if err == nil {
		registry.pids[pid] = true
	}
	registry.Unlock()
	if err != nil {
		ours.close()
		return nil, err
	}
	theirs.Close()
	return startInit(pid, pidfd, ours, &s.inits)
}

// startIsolated starts c, whose program is path, in the Spawner's
// namespace, and returns once c's program runs (or failed to start).
// An init found ended is replaced, once: nothing of the start it could
// not answer outlived it.
func (s *Spawner) startIsolated(c Cmd, path string) (*Process, error) {
	out := s.devnull
	if c.Output != nil {
		out = c.Output
	}
	for try := 0; ; try++ {
		in, err := s.namespace()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
		}
		p, err := in.start(c, path, out)
		var ended *initEnded
		if try == 0 && errors.As(err, &ended) {
			continue
		}
		if err != nil && ended != nil {
			err = fmt.Errorf("start %s: %w", c.Argv[0], err)
		}
		return p, err
	}
}

// childrenOf lists the children of pid, through the children file of each
// of its threads, else through the process table.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	var out []int
	found := false
	for _, task := range tasks {
		b, err := readProc(dir + task.Name() + "/children")
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
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/status")
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
