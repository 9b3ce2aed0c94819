package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reaper makes this process a child subreaper: orphans among the
// descendants of its children are re-parented to it rather than to init,
// so a plugin's double-forked daemon stays where graft can find and stop
// it. It reaps those orphans when they exit, so none stays a zombie; the
// children started by a Spawner are left to their owners. runc's
// signals.go does the same for containers.
//
// Only a process that starts children through Spawners or Run, and no
// other way, may run a Reaper: it would reap any other child before its
// owner could.
type Reaper struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartReaper makes this process a child subreaper and reaps adopted
// orphans until Stop.
func StartReaper() (*Reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become child subreaper: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reaper{cancel: cancel, done: make(chan struct{})}
	sigs := make(chan os.Signal, 1) // a buffer of one coalesces a burst
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		defer close(r.done)
		defer signal.Stop(sigs)
		for {
			reapOrphans()
			select {
			case <-sigs:
			case <-ctx.Done():
				return
			}
		}
	}()
	return r, nil
}

// Stop stops reaping and ends this process's role as a subreaper.
func (r *Reaper) Stop() {
	r.cancel()
	<-r.done
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
}

var reapMu sync.Mutex

// reapOrphans reaps every terminated child of this process that no
// Spawner registered. It holds the registry's lock while it tells them
// from a Spawner's, as Spawner.Start does while it forks, so a new child
// is either registered or not yet there. It asks waitid first, and reads
// the whole process table only when a Spawner's child, not yet reaped by
// its owner, hides the rest from waitid: a look at each exit of a host's
// probe (or of a plugin outside a PID namespace) read the whole table.
func reapOrphans() {
	reapMu.Lock()
	defer reapMu.Unlock()
	if reapUnregistered() {
		return
	}
	t, err := table()
	if err != nil {
		return
	}
	self := os.Getpid()
	registry.Lock()
	defer registry.Unlock()
	for _, e := range t {
		if e.ppid != self || !e.zombie || registry.pids[e.pid] {
			continue
		}
		var ws syscall.WaitStatus
		syscall.Wait4(e.pid, &ws, syscall.WNOHANG, nil)
	}
}

// reapUnregistered reaps the terminated children no Spawner registered,
// one by one as waitid finds them, and reports true once no child is left
// terminated; false when it finds a Spawner's, which hides any other
// behind it.
func reapUnregistered() bool {
	return reapTerminatedBut(&registry, func(pid int) bool { return registry.pids[pid] })
}

// reapTerminatedBut reaps this process's terminated children one by one,
// as waitid finds them, but for one that keep reports true of (asked
// under mu, which the reap is made under too): it reports false at the
// first such, whose exit hides any other's behind it, and true once no
// child is left terminated.
func reapTerminatedBut(mu sync.Locker, keep func(pid int) bool) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || info.Signo == 0 {
			return true // no child, or none terminated
		}
		pid := siginfoPid(&info)
		mu.Lock()
		kept := keep(pid)
		if !kept {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		mu.Unlock()
		if kept {
			return false
		}
	}
}

// Run runs cmd, a child started without a Spawner, to its end, and leaves
// it to its own Wait: it starts under the registry's lock and stays
// registered until it is reaped, so that a Reaper of this process, which
// reaps every child no Spawner registered, cannot reap it first (its
// Wait would then fail: "no child processes").
func Run(cmd *exec.Cmd) error {
	registry.Lock()
	err := cmd.Start()
	if err == nil {
		registry.pids[cmd.Process.Pid] = true
	}
	registry.Unlock()
	if err != nil {
		return err
	}
	err = cmd.Wait()
	registry.Lock()
	delete(registry.pids, cmd.Process.Pid)
	registry.Unlock()
	return err
}
