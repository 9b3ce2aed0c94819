package proc

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// keeper holds, for a namespace's init, the read ends of its plugins'
// output pipes (heldPlugin.keep), on a thread of the init's with a
// descriptor table of its own. A fork copies the table of the process
// that forks, and the child closes each close-on-exec descriptor at its
// exec: a fork/exec from a process holding a thousand descriptors took 70
// to 140 µs longer than from one holding none, and an init that held a
// read end of each of its plugins started a thousand of them 15 to 20%
// slower (bench/README.md, "1,000 starts: what the init's kept read ends
// cost"). So the init's own table keeps a handful, and it hands each read
// end to the keeper's thread once it has started keepBatch plugins, has the thread
// close it once it has forgotten keepBatch plugins, and takes a copy back
// for a host that attaches. One by one, each start and each stop would
// wake the thread, which on a machine of two cores took what the fork
// gained. A read end left open a while after its plugin is gone holds
// nothing up: the host's end of the pipe ends with its writers.
//
// Init and keeper talk over a SOCK_SEQPACKET pair, with messages of
// words, as the init and its host do (nswire_linux.go):
//
//	init → keeper   keep NSPID…  + the read ends of the plugins of the NSPIDs, in order
//	                drop NSPID…  close those of the NSPIDs
//	                give NSPID   send a copy of it back
//	keeper → init   given NSPID  + the copy, if it holds one
//
// The init's end is used under initState.mu, so one request is under
// way at a time and an answer follows its request.
type keeper struct {
	w       *wire        // the init's end
	pending map[int]int  // by nspid, the read ends not handed over yet
	drops   map[int]bool // the nspids whose read ends the keeper is yet to close
}

// keepBatch is how many read ends the init hands the keeper at once, and
// has it close.
const keepBatch = 32

// startKeeper starts the keeper's thread, whose table is a copy of the
// init's when it starts, less own, the init's descriptors (its socket, and
// its attach socket and record when it has them), which must close where
// the init closes them. It fails where the thread cannot have a table of
// its own; the init then holds the read ends itself.
//
// The copy keeps the descriptors of the runtime's poller at the numbers
// they have in the init's table, for the runtime may use them on any
// thread, and the poller is started first, so that it has them before.
// Nothing else on the thread opens or names a descriptor but its end of
// the pair and the read ends it is given. The thread is never the main
// one, which the package's init keeps locked while the init runs: so
// /proc/self/fd, the main thread's table, stays the init's, which
// pidfdPid reads.
func startKeeper(own ...int) (*keeper, error) {
	r, w, err := os.Pipe() // a file the poller watches: the poller starts
	if err != nil {
		return nil, err
	}
	r.Close()
	w.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		// Locked for good: the thread runs nothing else, and the runtime
		// makes its new threads from another one, as it does for every
		// thread locked this way.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FILES); err != nil {
			ready <- err
			return // the thread ends with its goroutine
		}
		for _, fd := range append(own, fds[0]) {
			unix.Close(fd)
		}
		ready <- nil
		keepReadEnds(newWire(fds[1]))
	}()
	if err := <-ready; err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, err
	}
	unix.Close(fds[1]) // the init's copy: the thread has its own
	return &keeper{w: newWire(fds[0]), pending: map[int]int{}, drops: map[int]bool{}}, nil
}

// keepReadEnds serves the init's requests on the keeper's thread, until
// the init's end closes (as the init ends).
func keepReadEnds(w *wire) {
	held := map[int]int{} // by nspid, the read end
	defer func() {
		for _, fd := range held {
			unix.Close(fd)
		}
		w.close()
	}()
	for {
		msg, fds, err := w.receiveFDs()
		if err != nil {
			return
		}
		word, nums, err := words(msg)
		if err == nil && word == "keep" && len(nums) == len(fds) {
			for i, nspid := range nums {
				if old, ok := held[nspid]; ok {
					unix.Close(old) // a pid handed out again: the old one's
				}
				held[nspid] = fds[i]
			}
			continue
		}
		closeAll(fds)
		if err == nil && word == "drop" {
			for _, nspid := range nums {
				if kept, ok := held[nspid]; ok {
					unix.Close(kept)
					delete(held, nspid)
				}
			}
			continue
		}
		if err != nil || word != "give" || len(nums) != 1 {
			continue
		}
		kept, ok := held[nums[0]]
		if !ok {
			kept = -1
		}
		if w.sendf(kept, "given %d", nums[0]) != nil {
			return
		}
	}
}

// put takes fd, the read end of the plugin of nspid, for the keeper,
// and hands the keeper those it has taken once they are keepBatch.
func (k *keeper) put(nspid, fd int) {
	if old, ok := k.pending[nspid]; ok {
		unix.Close(old)
	}
	// A pid handed out again while the keeper is yet to close the read
	// end of the plugin that had it: the keeper closes that one now, so
	// that a later drop of the pid can only mean this one.
	if k.drops[nspid] {
		k.flushDrops()
	}
	k.pending[nspid] = fd
	if len(k.pending) < keepBatch {
		return
	}
	msg := []byte("keep")
	fds := make([]int, 0, len(k.pending))
	for n, fd := range k.pending {
		msg = fmt.Appendf(msg, " %d", n)
		fds = append(fds, fd)
	}
	if k.w.send(msg, fds...) != nil {
		return // they stay the init's, as without a keeper
	}
	closeAll(fds) // the keeper has its copies
	clear(k.pending)
}

// drop closes the read end of the plugin of nspid, or has the keeper
// close it with keepBatch others.
func (k *keeper) drop(nspid int) {
	if fd, ok := k.pending[nspid]; ok {
		unix.Close(fd)
		delete(k.pending, nspid)
		return
	}
	k.drops[nspid] = true
	if len(k.drops) >= keepBatch {
		k.flushDrops()
	}
}

// flushDrops has the keeper close the read ends of the plugins dropped.
func (k *keeper) flushDrops() {
	msg := []byte("drop")
	for n := range k.drops {
		msg = fmt.Appendf(msg, " %d", n)
	}
	_ = k.w.send(msg) // if it fails, the keeper is gone, and its table with it
	clear(k.drops)
}

// give returns a copy of the read end of the plugin of nspid, for the
// caller to close, or -1.
func (k *keeper) give(nspid int) int {
	if fd, ok := k.pending[nspid]; ok {
		c, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		return c
	}
	if k.w.sendf(-1, "give %d", nspid) != nil {
		return -1
	}
	_, fd, err := k.w.receive()
	if err != nil {
		return -1
	}
	return fd
}
