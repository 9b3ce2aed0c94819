package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Member is a process of a family other than its leader: a descendant, a
// member of the leader's process group, or an orphan this process adopted
// that carries the family's marker.
type Member struct {
	Pid   int
	Pgid  int
	start uint64 // start time in clock ticks since boot: with Pid, an identity
}

// Family lists the live processes that belong with p, without p itself:
// its descendants, the members of its process group, and the orphans this
// process adopted (as a child subreaper), or for a process in a PID
// namespace its init adopted, whose environment carries p's marker, with
// their descendants. Zombies are dead and
// left out. A process once found stays a member while it lives, wherever
// it moves.
func (p *Process) Family() ([]Member, error) {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	in := map[int]uint64{} // by pid, its start time in the table
	var children []Member  // of this process or of its init, with their start time
	err := withSnapshot(func(t *procs) {
		add := func(pid int) { t.addTree(in, pid) }
		add(p.Pid)
		for _, m := range p.known {
			add(m.Pid)
		}
		for _, pid := range t.groups[p.Pid] {
			add(pid)
		}
		if p.marker != "" {
			for _, c := range t.strays[adopter(p.ns)] {
				if _, ok := in[c]; !ok {
					children = append(children, Member{Pid: c, start: t.entries[c].start})
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	// The marked orphans, with their descendants, from the table again:
	// their environments are read without holding the snapshot.
	if marked := marks(adopted(children), p.marker); len(marked) > 0 {
		withSnapshot(func(t *procs) {
			for _, c := range marked {
				t.addTree(in, c)
			}
		})
	}
	// The snapshot may be older than this call for all but the newest
	// processes: each candidate is read again, and kept only if it is
	// still the process seen (same start time) and alive.
	var out []Member
	for pid, start := range in {
		if pid == p.Pid {
			continue
		}
		e, err := stat(pid)
		if err != nil || e.zombie || e.start != start {
			continue
		}
		out = append(out, Member{Pid: pid, Pgid: e.pgid, start: e.start})
	}
	p.known = out
	return out, nil
}

// addTree adds pid and its descendants in t to in, with their start
// times, but for those in already.
func (t *procs) addTree(in map[int]uint64, pid int) {
	if _, ok := in[pid]; ok {
		return
	}
	in[pid] = t.entries[pid].start
	for _, c := range t.children[pid] {
		t.addTree(in, c)
	}
}

// adopter is the process orphans of a family go to: this one, a child
// subreaper, or the init of the family's namespace.
func adopter(ns *nsInit) int {
	if ns != nil {
		return ns.pid
	}
	return os.Getpid()
}

// adopted lists, of the children of this process or of an init that no
// Spawner had registered when the table read them (with their start time
// there), those that may be orphans it adopted: neither started by a
// Spawner (or an init) and alive, nor reaped since.
func adopted(children []Member) []int {
	registry.Lock()
	defer registry.Unlock()
	var out []int
	for _, c := range children {
		if registry.pids[c.Pid] {
			continue
		}
		if start, ok := registry.reaped[c.Pid]; ok && start == c.start {
			continue
		}
		out = append(out, c.Pid)
	}
	return out
}

// marks lists those of pids whose environment holds kv.
func marks(pids []int, kv string) []int {
	var out []int
	for _, pid := range pids {
		if hasEnv(pid, kv) {
			out = append(out, pid)
		}
	}
	return out
}

// hasEnv reports whether the initial environment of pid holds kv.
func hasEnv(pid int, kv string) bool {
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, v := range bytes.Split(b, []byte{0}) {
		if string(v) == kv {
			return true
		}
	}
	return false
}

// open returns a pidfd for m, or nil when m is gone: a pid now naming a
// process with another start time is gone too.
func (m Member) open() (*os.File, error) {
	fd, err := unix.PidfdOpen(m.Pid, unix.PIDFD_NONBLOCK)
	if err == unix.ESRCH {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", m.Pid, err)
	}
	// Checked after opening: the pidfd now pins whatever process has the
	// pid, so if the start time matches, it is m and stays m.
	if e, err := stat(m.Pid); err != nil || e.start != m.start || e.zombie {
		unix.Close(fd)
		return nil, nil
	}
	return os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(m.Pid)), nil
}

// Signal sends sig to m, unless it is gone.
func (m Member) Signal(sig syscall.Signal) error {
	f, err := m.open()
	if f == nil {
		return err
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	rc.Control(func(fd uintptr) { serr = unix.PidfdSendSignal(int(fd), sig, nil, 0) })
	if serr == unix.ESRCH {
		return nil
	}
	return serr
}

// WaitMembers waits until every member has terminated, or until stop is
// closed, and reports whether they all terminated.
func WaitMembers(members []Member, stop <-chan struct{}) bool {
	var files []*os.File
	for _, m := range members {
		if f, _ := m.open(); f != nil {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return true
	}
	var wg sync.WaitGroup
	gone := make(chan struct{}, len(files))
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc, err := f.SyscallConn()
			if err != nil {
				return
			}
			if rc.Read(func(fd uintptr) bool { return terminated(int(fd)) }) == nil {
				gone <- struct{}{}
			}
		}()
	}
	all := true
	for waiting := len(files); waiting > 0 && all; {
		select {
		case <-gone:
			waiting--
		case <-stop:
			all = false
		}
	}
	// Closing a pidfd ends its watch; then no goroutine is left behind.
	for _, f := range files {
		f.Close()
	}
	wg.Wait()
	return all
}

// Marked lists the live processes, anywhere on the machine, whose initial
// environment holds one of kvs (such as GRAFT_INSTANCE_ID=...): what is
// left of plugins whose host died without stopping them. It reads every
// process's environment, which is slow, and is meant for a host's start.
func Marked(kvs []string) ([]Member, error) {
	by, err := MarkedBy(kvs)
	var out []Member
	for _, ms := range by {
		out = append(out, ms...)
	}
	return out, err
}

// MarkedBy is Marked, each process listed under the first of kvs its
// environment holds: one look at every process for many marks.
func MarkedBy(kvs []string) (map[string][]Member, error) {
	want := map[string]bool{}
	for _, kv := range kvs {
		want[kv] = true
	}
	if len(want) == 0 {
		return nil, nil
	}
	t, err := table()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	out := map[string][]Member{}
	for pid, e := range t {
		if pid == self || e.zombie {
			continue
		}
		b, err := readProc("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if want[string(v)] {
				out[string(v)] = append(out[string(v)], Member{Pid: pid, Pgid: e.pgid, start: e.start})
				break
			}
		}
	}
	return out, nil
}
