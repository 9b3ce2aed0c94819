//go:build unix

package fence

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on the file at path, creating it, and
// writes this process's pid in it for the error of the next one to try.
// An flock goes with its open file, so a second Open in this process is
// refused too, and with the process, however it dies. The file is never
// removed: removing it while another process waits to open it would let
// two processes hold locks on two different files of one name.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			if pid := readPID(path); pid != 0 {
				return nil, fmt.Errorf("%w: pid %d holds %s", ErrInUse, pid, path)
			}
			return nil, fmt.Errorf("%w: another process holds %s", ErrInUse, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The pid is only a hint for that error: the lock is the flock.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// unlock releases a lock taken by lockFile.
func unlock(f *os.File) error {
	// Closing the file releases the flock.
	if err := f.Close(); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
