package proc

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// registry holds the pids of the children started here (and of those an
// init started for a Spawner here) and not yet reaped, which the reaper
// leaves to their owners; and the children reaped
// since the process table was last read whole, by pid with their start
// time, which the table may still list.
var registry = struct {
	sync.Mutex
	pids   map[int]bool
	reaped map[int]uint64
}{pids: map[int]bool{}, reaped: map[int]uint64{}}

// Process is a child started by a Spawner. Its pidfd pins its identity, so
// no signal meant for it can reach another process that reused its pid;
// and it stays unreaped (a zombie once it exits) until Reap, which keeps
// its pid and process group id from being reused while its family is
// dealt with.
type Process struct {
	Pid    int
	marker string
	pidfd  *os.File // non-blocking, in the runtime's poller

	exited chan struct{}
	mu     sync.Mutex
	reaped bool
	status Status

	// The family members the last look found (see Family).
	fmu   sync.Mutex
	known []Member

	// ns is the init of the process's PID namespace, when it has one; the
	// init, not this process, is then the process's parent, and nspid the
	// process's pid there.
	ns    *nsInit
	nspid int
}

func newProcess(pid, pidfd int, marker string) (*Process, error) {
	if pidfd < 0 {
		return nil, errors.New("no pidfd: graft needs Linux 5.4 or later")
	}
	// A non-blocking pidfd joins the runtime's poller, so waiting for the
	// exit parks a goroutine instead of a thread.
	// A pidfd has no status flags but its access mode, which F_SETFL
	// leaves alone: one call sets O_NONBLOCK.
	if _, err := unix.FcntlInt(uintptr(pidfd), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		unix.Close(pidfd)
		return nil, err
	}
	p := &Process{Pid: pid, marker: marker, pidfd: os.NewFile(uintptr(pidfd), fmt.Sprintf("pidfd:%d", pid)), exited: make(chan struct{})}
	go p.watch()
	return p, nil
}

// watch closes exited when the process terminates. A pidfd turns readable
// then; the process is not reaped.
func (p *Process) watch() {
	defer close(p.exited)
	rc, err := p.pidfd.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool { return terminated(int(fd)) })
}

// terminated reports whether the process of pidfd fd has terminated,
// without waiting and without reaping it.
func terminated(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

// Exited is closed when the process has terminated; it is then a zombie
// until Reap.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Signal sends sig to the process alone. After it terminated this does
// nothing.
func (p *Process) Signal(sig syscall.Signal) error {
	rc, err := p.pidfd.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.PidfdSendSignal(int(fd), sig, nil, 0) }); err != nil {
		return err
	}
	if serr == unix.ESRCH {
		return nil
	}
	return serr
}

// SignalGroup sends sig to the process group the process leads. Until Reap
// the group id cannot name another group: the process, even as a zombie,
// holds it.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil
	}
	if err := syscall.Kill(-p.Pid, sig); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

// Reap collects the exit status of a terminated process, frees its pid and
// closes its pidfd. It waits for the process to terminate first.
func (p *Process) Reap() (Status, error) {
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return p.status, nil
	}
	if p.ns != nil {
		p.status = statusOf(p.ns.reap(p.nspid))
		p.reaped = true
		forget(p.Pid)
		p.pidfd.Close()
		return p.status, nil
	}
	// The pid is safe to wait for: the process has terminated and, still
	// unreaped, holds it.
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.Pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return Status{}, fmt.Errorf("reap %d: %w", p.Pid, err)
		}
		break
	}
	p.status = statusOf(ws)
	p.reaped = true
	forget(p.Pid)
	p.pidfd.Close()
	return p.status, nil
}

// forget takes pid, just reaped, out of the registry's children, and
// notes it as reaped while the process table may still list it.
func forget(pid int) {
	e, seen := snapshotEntry(pid) // never under the registry's lock: see index
	registry.Lock()
	delete(registry.pids, pid)
	if seen {
		registry.reaped[pid] = e.start
	}
	registry.Unlock()
}

// Isolated reports whether the process runs in its Spawner's PID namespace
// (see Cmd.Isolate).
func (p *Process) Isolated() bool { return p.ns != nil }

func statusOf(ws syscall.WaitStatus) Status {
	if ws.Signaled() {
		return Status{Code: -1, Signal: ws.Signal()}
	}
	return Status{Code: ws.ExitStatus()}
}

// SetTerm has the init of the process's namespace stop it in d (its stop
// signal to its group, SIGKILL to its family after its stop timeout),
// unless SetTerm comes again first; d of 0 ends the term. The init runs
// whatever becomes of this process: a floating leader's plugin is stopped
// at the end of its term even while its host is frozen. Only in a PID
// namespace.
func (p *Process) SetTerm(d time.Duration) error {
	if p.ns == nil {
		return errors.New("no term without the host's PID namespace: its init is what ends it")
	}
	return p.ns.setTerm(p.nspid, d)
}
