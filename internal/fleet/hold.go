//go:build linux

package fleet

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/graftland/graft/instance"
)

// Hold is the fleet's floating plugin: hold DIR PLUGIN HOST. It takes an
// exclusive flock on DIR/locks/PLUGIN for as long as it runs, and appends
// what it does to DIR/records/PLUGIN, a line each:
//
//	start EPOCH HOST UNIXNANO PID      it holds the lock, and is ready
//	violation EPOCH HOST UNIXNANO PID  another process held the lock
//	end EPOCH HOST UNIXNANO PID        it was told to stop, and lets go
//
// The epoch is its generation (GRAFT_GENERATION), which a floating
// plugin's leader gets from its term. Two leaders of one plugin at once
// are thus a fact the kernel sees (the second one's flock fails), not an
// inference from the leases. A process that finds the lock held records
// the violation, then waits for the lock, as a program that must not run
// twice would.
func Hold(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: hold DIR PLUGIN HOST")
	}
	dir, plugin, host := args[0], args[1], args[2]
	epoch := os.Getenv(instance.EnvGeneration)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	rec, err := os.OpenFile(filepath.Join(dir, "records", plugin), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	say := func(what string) error {
		// One write of a short line to a file opened O_APPEND: lines of
		// processes writing at once do not interleave.
		_, err := fmt.Fprintf(rec, "%s %s %s %d %d\n", what, epoch, host, time.Now().UnixNano(), outerPID())
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "locks", plugin), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("flock %s: %w", lock.Name(), err)
		}
		if err := say("violation"); err != nil {
			return err
		}
		locked := make(chan error, 1)
		go func() { locked <- unix.Flock(int(lock.Fd()), unix.LOCK_EX) }()
		select {
		case err := <-locked:
			if err != nil {
				return fmt.Errorf("flock %s: %w", lock.Name(), err)
			}
		case <-stop:
			return nil
		}
	}
	if err := say("start"); err != nil {
		return err
	}
	<-stop
	return say("end")
}

// outerPID is this process's pid as the outermost PID namespace that
// /proc shows sees it (the harness's), not its pid in the namespace of its
// host's plugins.
func outerPID() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return os.Getpid()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				if pid, err := strconv.Atoi(f[0]); err == nil {
					return pid
				}
			}
		}
	}
	return os.Getpid()
}
