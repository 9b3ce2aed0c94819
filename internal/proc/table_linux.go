package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// entry is one line of the process table.
type entry struct {
	pid, ppid, pgid int
	start           uint64
	zombie          bool
}

// readTable reads every process's stat from /proc. It runs on every stop,
// so it reads with raw system calls into one buffer and parses in place: a
// few microseconds a process.
func readTable() (map[int]entry, error) {
	dir, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc", Err: err}
	}
	defer unix.Close(dir)
	t := make(map[int]entry, 512)
	dents := make([]byte, 64<<10)
	buf := make([]byte, 1024)
	var names []string
	for {
		n, err := unix.Getdents(dir, dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: "/proc", Err: err}
		}
		if n <= 0 {
			return t, nil
		}
		_, _, names = unix.ParseDirent(dents[:n], -1, names[:0])
		for _, name := range names {
			pid, err := strconv.Atoi(name)
			if err != nil {
				continue
			}
			if e, ok := statAt(dir, name, buf); ok {
				e.pid = pid
				t[pid] = e
			}
		}
	}
}

// statAt reads /proc/PID/stat through the /proc directory dir.
func statAt(dir int, pid string, buf []byte) (entry, bool) {
	fd, err := unix.Openat(dir, pid+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return entry{}, false // gone since the directory was read
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return entry{}, false
	}
	return parseStat(buf[:n])
}

// stat reads /proc/PID/stat.
func stat(pid int) (entry, error) {
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return entry{}, err
	}
	e, ok := parseStat(b)
	if !ok {
		return entry{}, errors.New("malformed stat")
	}
	e.pid = pid
	return e, nil
}

// parseStat reads "pid (comm) state ppid pgrp ... starttime ...". comm may
// hold spaces and parentheses, so fields are counted from the last ')':
// state is the first after it, ppid the second, pgrp the third, starttime
// the twentieth.
func parseStat(b []byte) (entry, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return entry{}, false
	}
	var e entry
	field := 0
	for j := i + 1; j < len(b) && field <= 20; {
		for j < len(b) && b[j] == ' ' {
			j++
		}
		k := j
		for k < len(b) && b[k] != ' ' && b[k] != '\n' {
			k++
		}
		if k == j {
			break
		}
		field++
		switch field {
		case 1:
			e.zombie = b[j] == 'Z'
		case 2:
			e.ppid = atoi(b[j:k])
		case 3:
			e.pgid = atoi(b[j:k])
		case 20:
			e.start = uint64(atoi(b[j:k]))
		}
		j = k
	}
	return e, field >= 20
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return n
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// procs is a read of the process table, indexed. The snapshot's (snap.cur)
// is brought up to date in place, under snap's lock, which its readers
// hold too (see withSnapshot): copying and indexing the whole table again
// for each new process cost more than reading the new process did, by a
// hundred times on a host of 1,000 plugins.
type procs struct {
	entries  map[int]entry
	children map[int][]int // by parent
	groups   map[int][]int // by process group
	// strays are the children, by parent, that no Spawner had registered
	// when they were read: of this process or of an init, those that
	// may be orphans it adopted (see adopted). An init's thousand
	// plugins are not among them, so a family's look at its init's
	// orphans does not go through them all.
	strays map[int][]int
}

// index makes the table of entries. It takes the registry's lock: the
// snapshot's may be held, never the other way round.
func index(entries map[int]entry) *procs {
	t := &procs{entries: entries, children: map[int][]int{}, groups: map[int][]int{}, strays: map[int][]int{}}
	registry.Lock()
	defer registry.Unlock()
	for _, e := range entries {
		t.link(e)
	}
	return t
}

// link lists e under its parent and its group; under the registry's lock.
func (t *procs) link(e entry) {
	t.children[e.ppid] = append(t.children[e.ppid], e.pid)
	t.groups[e.pgid] = append(t.groups[e.pgid], e.pid)
	if !registry.pids[e.pid] {
		t.strays[e.ppid] = append(t.strays[e.ppid], e.pid)
	}
}

// set makes e the entry of its pid, in place of any older one.
func (t *procs) set(e entry) {
	t.remove(e.pid)
	t.entries[e.pid] = e
	registry.Lock()
	t.link(e)
	registry.Unlock()
}

// remove drops the entry of pid, if any.
func (t *procs) remove(pid int) {
	old, ok := t.entries[pid]
	if !ok {
		return
	}
	delete(t.entries, pid)
	drop(t.children, old.ppid, pid)
	drop(t.groups, old.pgid, pid)
	drop(t.strays, old.ppid, pid)
}

// drop takes pid out of the list of key in m.
func drop(m map[int][]int, key, pid int) {
	l := m[key]
	for i, v := range l {
		if v == pid {
			l[i] = l[len(l)-1]
			l = l[:len(l)-1]
			break
		}
	}
	if len(l) == 0 {
		delete(m, key)
	} else {
		m[key] = l
	}
}

// The process table is read whole only when many processes were created
// since the last read; otherwise it is brought up to date by reading just
// the processes created since. The kernel hands pids out in turn, after
// the last it gave (ns_last_pid) and wrapping at pid_max, so the processes
// created between two looks at ns_last_pid are those with pids between the
// two values, unless the counter went all the way round in between. It
// cannot have if fewer tasks were created than pid_max minus the pids in
// use, and the kernel counts every task it creates ("processes" in
// /proc/stat, threads included): a few thousand since the last look, and
// the pids between the two values are all that is new.
//
// Processes that die stay in the snapshot until their pid is handed out
// again or the next whole read; callers read each candidate again.
//
// cur is changed in place under the lock: readers hold it while they use
// the table (withSnapshot).
var snap struct {
	sync.Mutex
	cur   *procs // nil before the first read
	last  int    // ns_last_pid, read just before cur was brought up to date
	forks uint64 // tasks created since boot, read then too
}

// maxIncrement bounds the new processes read one by one; past it, the
// whole table is read.
const maxIncrement = 4096

// snapshot brings the process table up to date for every process created
// before the call, and returns it. Callers at the same time share one
// refresh. The table returned may be the snapshot's own, changed in
// place: read it only within withSnapshot.
func snapshot() (*procs, error) {
	return snapshots.do(freshSnapshot)
}

// withSnapshot calls f with the process table, up to date for every
// process created before the call, under the snapshot's lock. f must not
// keep t; it may take the registry's lock, which is always taken after
// the snapshot's, never before.
func withSnapshot(f func(t *procs)) error {
	t, err := snapshot()
	if err != nil {
		return err
	}
	snap.Lock()
	defer snap.Unlock()
	f(t)
	return nil
}

var snapshots flight[*procs]

func freshSnapshot() (*procs, error) {
	if t := refresh(); t != nil {
		return t, nil
	}
	// Counted before the read: later processes are the next refresh's.
	last, lastErr := lastPid()
	forks, forksErr := forkCount()
	entries, err := table()
	if err != nil {
		return nil, err
	}
	t := index(entries)
	snap.Lock()
	stored := lastErr == nil && forksErr == nil && (snap.cur == nil || forks >= snap.forks)
	if stored {
		snap.cur, snap.last, snap.forks = t, last, forks
	}
	snap.Unlock()
	if stored {
		registry.Lock()
		clear(registry.reaped) // they are not in a whole read made since
		registry.Unlock()
	}
	return t, nil
}

// snapshotEntry returns what the snapshot holds of pid.
func snapshotEntry(pid int) (entry, bool) {
	snap.Lock()
	defer snap.Unlock()
	if snap.cur == nil {
		return entry{}, false
	}
	e, ok := snap.cur.entries[pid]
	return e, ok
}

// refresh brings the snapshot up to date by reading the processes created
// since it was, when few were, and returns it; nil when the whole table
// must be read.
func refresh() *procs {
	last, err := lastPid()
	if err != nil {
		return nil
	}
	forks, err := forkCount()
	if err != nil {
		return nil
	}
	snap.Lock()
	defer snap.Unlock()
	if snap.cur == nil || forks < snap.forks || forks-snap.forks > maxIncrement ||
		cyclic(snap.last, last) > maxIncrement+len(snap.cur.entries) {
		return nil
	}
	if last != snap.last {
		max := pidMax()
		for pid := snap.last; pid != last; {
			if pid++; pid > max {
				pid = 1
			}
			// Most pids handed out meanwhile on a busy machine are
			// threads, or processes gone already: pidfd_open tells
			// both in one call, before the stat is read.
			if !leader(pid) {
				snap.cur.remove(pid) // an old entry for a pid now free
			} else if e, err := stat(pid); err == nil {
				snap.cur.set(e)
			} else {
				snap.cur.remove(pid)
			}
		}
	}
	snap.last, snap.forks = last, forks
	return snap.cur
}

// leader reports whether pid is a process, not another thread of one:
// /proc answers for a thread's id as for a process's (with its process's
// parent and environment), though it lists processes alone. pidfd_open
// tells them apart in one call (EINVAL for a thread), where reading
// /proc/PID/status took most of a refresh.
func leader(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// forkCount reads how many tasks the kernel has created since boot.
func forkCount() (uint64, error) {
	b, err := readProc("/proc/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.Index(b, []byte("\nprocesses "))
	if i < 0 {
		return 0, errors.New("/proc/stat: no processes line")
	}
	f := bytes.Fields(b[i+len("\nprocesses "):])
	if len(f) == 0 {
		return 0, errors.New("/proc/stat: malformed processes line")
	}
	return strconv.ParseUint(string(f[0]), 10, 64)
}

// table returns a whole read of the process table that began after the
// call. Callers at the same time share one read (the map is only read):
// the reaper and the stops of two hundred plugins read /proc a few times,
// not hundreds.
func table() (map[int]entry, error) {
	return tables.do(readTable)
}

var tables flight[map[int]entry]

// flight runs a function for concurrent callers that each need a run that
// begins after they ask: every caller waiting when a run begins gets that
// run's result.
type flight[T any] struct {
	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	next    *run[T]
}

type run[T any] struct {
	started bool
	done    chan struct{}
	v       T
	err     error
}

func (f *flight[T]) do(fn func() (T, error)) (T, error) {
	f.mu.Lock()
	if f.cond == nil {
		f.cond = sync.NewCond(&f.mu)
	}
	if f.next == nil {
		f.next = &run[T]{done: make(chan struct{})}
	}
	r := f.next
	for f.running && !r.started {
		f.cond.Wait()
	}
	if r.started {
		f.mu.Unlock()
		<-r.done
		return r.v, r.err
	}
	r.started, f.running, f.next = true, true, nil
	f.mu.Unlock()
	r.v, r.err = fn()
	f.mu.Lock()
	f.running = false
	close(r.done)
	f.cond.Broadcast()
	f.mu.Unlock()
	return r.v, r.err
}

// cyclic is how many pids were handed out after from up to to.
func cyclic(from, to int) int {
	if to >= from {
		return to - from
	}
	return pidMax() - from + to
}

// lastPid reads the pid the kernel handed out last, in this pid namespace.
func lastPid() (int, error) {
	return readInt("/proc/sys/kernel/ns_last_pid")
}

var pidMax = sync.OnceValue(func() int {
	n, err := readInt("/proc/sys/kernel/pid_max")
	if err != nil {
		return 1 << 22 // the kernel's largest
	}
	return n
})

func readInt(path string) (int, error) {
	b, err := readProc(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(bytes.TrimSpace(b)))
}
