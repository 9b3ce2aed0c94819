package proc

import (
	"bytes"
	"errors"
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

// entry is one line of the process table.
type entry struct {
	pid, ppid, pgid int
	start           uint64
	zombie          bool
}

// table reads every process's stat from /proc.
func table() (map[int]entry, error) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	t := make(map[int]entry, len(dir))
	for _, d := range dir {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if e, err := stat(pid); err == nil {
			t[pid] = e
		}
	}
	return t, nil
}

// stat reads /proc/PID/stat: "pid (comm) state ppid pgrp ... starttime ...".
// comm may hold spaces and parentheses, so fields are counted from the
// last ')'.
func stat(pid int) (entry, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return entry{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return entry{}, errors.New("malformed stat")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return entry{}, errors.New("malformed stat")
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgid, _ := strconv.Atoi(string(f[2]))
	start, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return entry{pid: pid, ppid: ppid, pgid: pgid, start: start, zombie: f[0][0] == 'Z'}, nil
}

// Family lists the live processes that belong with p, without p itself:
// its descendants, the members of its process group, and the orphans this
// process adopted (as a child subreaper) whose environment carries p's
// marker, with their descendants. Zombies are dead and left out.
func (p *Process) Family() ([]Member, error) {
	t, err := table()
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range t {
		children[e.ppid] = append(children[e.ppid], e.pid)
	}
	in := map[int]bool{}
	var add func(pid int)
	add = func(pid int) {
		if in[pid] {
			return
		}
		in[pid] = true
		for _, c := range children[pid] {
			add(c)
		}
	}
	add(p.Pid)
	for _, e := range t {
		if e.pgid == p.Pid {
			add(e.pid)
		}
	}
	if p.marker != "" {
		self := os.Getpid()
		for _, c := range children[self] {
			if !in[c] && !registered(c) && hasEnv(c, p.marker) {
				add(c)
			}
		}
	}
	var out []Member
	for pid := range in {
		if e := t[pid]; pid != p.Pid && !e.zombie {
			out = append(out, Member{Pid: pid, Pgid: e.pgid, start: e.start})
		}
	}
	return out, nil
}

func registered(pid int) bool {
	registry.Lock()
	defer registry.Unlock()
	return registry.pids[pid]
}

// hasEnv reports whether the initial environment of pid holds kv.
func hasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
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
