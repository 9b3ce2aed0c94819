package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A namespace's init can outlive the host that made it, so that its
// plugins do not die with a host that is replaced (graft upgrade
// re-executes it) or that crashed (docs/upgrade.md). Told "hold MS ALL",
// an init whose host is gone keeps its plugins MS milliseconds, their
// output waiting in their pipes (it holds each pipe's read end too), and
// listens on its attach socket: the first host of its user to connect
// there gets every plugin, with a pidfd of it, the read end of its pipe
// and the tag it was started with, and talks to the init from then on as
// its own host did. A plugin started without Hold is killed, with its
// family, as soon as its host is gone, unless ALL says the hold is for
// every plugin (an upgrade). When the window passes with no host, the init stops every
// plugin itself (its stop signal to its group, SIGKILL after its stop
// timeout), records each stop, and ends: nothing outlives it.

// SetHandover makes the Spawner's namespace init, once made, wait at h for
// the next host; window is how long it keeps the plugins started with Hold
// once this process is gone (0: not at all, the kernel kills them at
// once). Call it before the first Start.
func (s *Spawner) SetHandover(h Handover, window time.Duration) {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	s.handover, s.window = h, window
}

// Hold tells the namespace's init, and any made later, to keep its
// plugins window long once this process is gone, and all of them, not
// only those started with Hold, if all: what an upgrade asks before this
// process executes the new program. Without a handover it fails.
func (s *Spawner) Hold(window time.Duration, all bool) error {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	if s.handover.Socket == "" {
		return errors.New("the namespace's init has no attach socket")
	}
	s.window, s.all = window, all
	if s.ns == nil || s.ns.ended() {
		return nil
	}
	return s.ns.hold(window, all)
}

// hold sends "hold".
func (in *nsInit) hold(window time.Duration, all bool) error {
	var err error
	in.send(func() error {
		err = in.w.sendf(-1, "hold %d %d", window.Milliseconds(), boolNum(all))
		return err
	})
	if err == nil && in.ended() {
		err = in.err
	}
	return err
}

// quit tells the init to end now, without keeping anything.
func (in *nsInit) quit() { in.send(func() error { return in.w.sendf(-1, "quit") }) }

// listener makes the attach socket of a new init: a SOCK_SEQPACKET socket
// bound at path (what was there removed: no init answers there, or
// Attach would have found it), and the file it records its stops in.
func listener(h Handover) (sock, record *os.File, err error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	sock = os.NewFile(uintptr(fd), "attach socket")
	os.Remove(h.Socket)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: h.Socket}); err != nil {
		sock.Close()
		return nil, nil, fmt.Errorf("attach socket %s: %w", h.Socket, err)
	}
	if err := unix.Listen(fd, 4); err != nil {
		sock.Close()
		return nil, nil, err
	}
	record, err = os.OpenFile(h.Record, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		sock.Close()
		return nil, nil, err
	}
	return sock, record, nil
}

// Attach connects to an init waiting at the handover's socket, whose host
// is gone, and makes it the Spawner's namespace: it returns the plugins
// the init kept. With no init waiting there it returns none. Call it
// before the first Start.
func (s *Spawner) Attach() ([]Held, error) {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	if s.handover.Socket == "" || s.ns != nil {
		return nil, nil
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	err = unix.Connect(fd, &unix.SockaddrUnix{Name: s.handover.Socket})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
		unix.Close(fd)
		return nil, nil
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("attach to the init at %s: %w", s.handover.Socket, err)
	}
	// The credentials of a listening socket's peer are those of who made
	// it listen: a host of this user (which hands it to its init).
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err == nil && int(cred.Uid) != os.Geteuid() {
		err = fmt.Errorf("it was made by uid %d, not by this process's %d", cred.Uid, os.Geteuid())
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("attach to the init at %s: %w", s.handover.Socket, err)
	}
	w, err := newPolledWire(fd)
	if err != nil {
		return nil, err
	}
	in, held, err := s.adopt(w)
	if err != nil {
		w.close()
		return nil, fmt.Errorf("attach to the init at %s: %w", s.handover.Socket, err)
	}
	s.ns = in
	s.isoOnce.Do(func() { s.iso = Isolation{Namespace: true, User: os.Geteuid() != 0} })
	if err := in.hold(s.window, s.all); err != nil {
		return held, err
	}
	return held, nil
}

// attachWait bounds the wait for an init's list of plugins: it answers
// once it has noticed its host gone, at once after a crash, within
// milliseconds of an upgrade's exec.
const attachWait = 10 * time.Second

// adopt reads the list of plugins an init kept, on w, after "held N"
// and a pidfd of the init, and watches the init.
func (s *Spawner) adopt(w *wire) (*nsInit, []Held, error) {
	w.f.SetReadDeadline(time.Now().Add(attachWait))
	msg, pidfd, err := w.receive()
	if err != nil {
		return nil, nil, err
	}
	word, nums, err := words(msg)
	if err != nil || word != "held" || len(nums) != 2 || pidfd < 0 {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return nil, nil, fmt.Errorf("it said %q", msg)
	}
	pid, err := pidfdPid(pidfd)
	if err != nil {
		unix.Close(pidfd)
		return nil, nil, err
	}
	registry.Lock()
	registry.pids[pid] = true // when it is this process's child (an exec in place), it is not an orphan to reap
	registry.Unlock()
	proc, err := newProcess(pid, pidfd, "")
	if err != nil {
		forget(pid)
		return nil, nil, err
	}
	in := newNsInit(pid, proc, w)
	in.terms = takesTerms(pid)
	var held []Held
	fail := func(err error) (*nsInit, []Held, error) {
		for _, h := range held {
			if h.Output != nil {
				h.Output.Close()
			}
			h.Process.pidfd.Close()
			forget(h.Process.Pid)
		}
		proc.pidfd.Close()
		forget(pid)
		return nil, nil, err
	}
	for range nums[0] {
		msg, fds, err := w.receiveFDs()
		if err != nil {
			return fail(err)
		}
		h, err := in.heldOf(msg, fds)
		if err != nil {
			closeAll(fds)
			return fail(err)
		}
		h.HostGone = time.UnixMilli(int64(nums[1]))
		held = append(held, h)
	}
	w.f.SetReadDeadline(time.Time{})
	in.watchInit(&s.inits)
	in.track()
	return in, held, nil
}

// heldOf makes the Held of a "plugin NSPID LEN\nMARKER\x00TAG" message
// and its descriptors: a pidfd, and the pipe's read end if any.
func (in *nsInit) heldOf(msg []byte, fds []int) (Held, error) {
	head, body, _ := strings.Cut(string(msg), "\n")
	word, nums, err := words([]byte(head))
	if err != nil || word != "plugin" || len(nums) != 2 || nums[1] != len(body) || len(fds) == 0 {
		return Held{}, fmt.Errorf("it said %q", head)
	}
	marker, tag, _ := strings.Cut(body, "\x00")
	pid, err := pidOfPidfd(fds[0])
	if err != nil {
		return Held{}, err
	}
	p, err := newProcess(pid, fds[0], marker)
	if err != nil {
		return Held{}, err
	}
	p.ns, p.nspid = in, nums[0]
	registry.Lock()
	registry.pids[pid] = true
	registry.Unlock()
	h := Held{Process: p, Tag: tag}
	if len(fds) > 1 {
		if err := unix.SetNonblock(fds[1], true); err != nil {
			return Held{}, err
		}
		h.Output = os.NewFile(uintptr(fds[1]), "output")
	}
	return h, nil
}

// awaitHost is the init once its host is gone. Without a hold, it
// returns nil at once: the init ends, and the kernel kills its plugins.
// With one, it stops the plugins not held, then waits for a host at its
// attach socket and returns the connection to it; when the window passes
// first, it stops every plugin and returns nil.
func (in *initState) awaitHost() *wire {
	gone := time.Now()
	in.mu.Lock()
	in.gone = gone
	window, all := in.window, in.all
	var drop []int
	for nspid, h := range in.held {
		if !h.Hold && !all {
			drop = append(drop, nspid)
		}
	}
	in.mu.Unlock()
	if window <= 0 || in.listen < 0 {
		return nil
	}
	in.killPlugins(drop, gone)
	unix.SetNonblock(in.listen, true)
	for deadline := gone.Add(window); time.Now().Before(deadline); {
		fds := []unix.PollFd{{Fd: int32(in.listen), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1); err != nil || n == 0 {
			continue
		}
		fd, _, err := unix.Accept4(in.listen, unix.SOCK_CLOEXEC)
		if err != nil {
			continue
		}
		unix.SetNonblock(fd, false)
		if w := in.attach(fd); w != nil {
			return w
		}
	}
	in.mu.Lock()
	var rest []int
	for nspid := range in.held {
		rest = append(rest, nspid)
	}
	in.mu.Unlock()
	in.stopPlugins(rest, gone)
	return nil
}

// attach hands the plugins to the host connected on fd, if it runs as the
// init's user, and returns the connection; else nil.
func (in *initState) attach(fd int) *wire {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || int(cred.Uid) != os.Geteuid() {
		unix.Close(fd)
		return nil
	}
	w := newWire(fd)
	self, err := unix.PidfdOpen(1, 0) // itself, in its namespace
	if err != nil {
		w.close()
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	err = w.sendf(self, "held %d %d", len(in.held), in.gone.UnixMilli())
	unix.Close(self)
	for nspid, h := range in.held {
		if err != nil {
			break
		}
		var pidfd int
		if pidfd, err = unix.PidfdOpen(nspid, 0); err != nil {
			break
		}
		body := h.Marker + "\x00" + h.Tag
		keep := h.keep
		if h.kept {
			keep = in.keeper.give(nspid)
		}
		err = w.send(fmt.Appendf(nil, "plugin %d %d\n%s", nspid, len(body), body), pidfd, keep)
		unix.Close(pidfd)
		if h.kept && keep >= 0 {
			unix.Close(keep)
		}
	}
	if err != nil {
		w.close()
		return nil
	}
	return w
}

// stopPlugins stops the plugins of nspids, with no host: each one's stop
// signal to its group, SIGKILL to the group after its stop timeout; then
// reaps them and records each stop.
func (in *initState) stopPlugins(nspids []int, gone time.Time) {
	if len(nspids) == 0 {
		return
	}
	type pending struct {
		nspid    int
		h        *heldPlugin
		deadline time.Time
		killed   bool
	}
	in.mu.Lock()
	var left []*pending
	now := time.Now()
	for _, nspid := range nspids {
		h := in.held[nspid]
		if h == nil {
			continue
		}
		sig := h.StopSignal
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		syscall.Kill(-nspid, sig)
		left = append(left, &pending{nspid: nspid, h: h, deadline: now.Add(h.StopTimeout)})
	}
	in.mu.Unlock()
	for len(left) > 0 {
		var still []*pending
		for _, p := range left {
			if exited(p.nspid) {
				in.mu.Lock()
				ws := reap(p.nspid)
				in.forget(p.nspid, p.h)
				in.mu.Unlock()
				outcome := "exited"
				if p.killed {
					outcome = "killed"
				}
				in.recordStop(p.h.Tag, gone, outcome, ws)
				continue
			}
			if !p.killed && time.Now().After(p.deadline) {
				syscall.Kill(-p.nspid, syscall.SIGKILL)
				p.killed = true
			}
			still = append(still, p)
		}
		left = still
		if len(left) > 0 {
			time.Sleep(orphanPause)
		}
	}
}

// killPlugins kills the plugins of nspids at once, with every member of
// each one's family (by its marker), as the kernel would have killed the
// namespace: a plugin not held for the next host dies with its host, as a
// floating plugin must, another host being free to take its lease. They
// are reaped, and each kill recorded.
func (in *initState) killPlugins(nspids []int, gone time.Time) {
	for _, nspid := range nspids {
		in.mu.Lock()
		h := in.held[nspid]
		in.mu.Unlock()
		if h == nil {
			continue
		}
		killFamily(nspid, h)
		in.mu.Lock()
		ws := reap(nspid)
		in.forget(nspid, h)
		in.mu.Unlock()
		in.recordStop(h.Tag, gone, "killed", ws)
	}
}

// exited reports whether the child nspid has terminated, without reaping it.
func exited(nspid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, nspid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0 // an error: nothing left to wait for
}

// recordStop appends a HeldStop to the record file.
func (in *initState) recordStop(tag string, gone time.Time, outcome string, ws syscall.WaitStatus) {
	if in.record < 0 {
		return
	}
	st := statusOf(ws)
	status := fmt.Sprintf("exit status %d", st.Code)
	if st.Signal != 0 {
		status = "signal: " + SignalName(st.Signal)
	}
	b, _ := json.Marshal(HeldStop{Tag: tag, HostGone: gone, At: time.Now(), Outcome: outcome, Status: status})
	unix.Write(in.record, append(b, '\n'))
}

// live are the inits of this process's Spawners, for EndNamespaces.
var live = struct {
	sync.Mutex
	inits map[*nsInit]bool
}{inits: map[*nsInit]bool{}}

// track counts in live until it ends.
func (in *nsInit) track() {
	live.Lock()
	live.inits[in] = true
	live.Unlock()
	go func() {
		<-in.done
		live.Lock()
		delete(live.inits, in)
		live.Unlock()
	}()
}

// EndNamespaces tells the init of every Spawner of this process to end
// now, keeping nothing for a next host: a process about to exit on
// purpose without stopping its plugins (a second Ctrl-C) takes them
// with it, as it did before inits could outlive their host.
func EndNamespaces() {
	live.Lock()
	defer live.Unlock()
	for in := range live.inits {
		in.quit()
	}
}
