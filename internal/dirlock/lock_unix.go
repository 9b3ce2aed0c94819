//go:build unix

package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/graftland/graft/internal/safefs"
)

// Lock takes the lock file at path for this process, creating it, and
// writes this process's pid in it for the error of the next one to try (a
// *HeldError, naming holder: "host" or "runner" for a state dir's lock,
// empty for another). The lock is an flock: it goes with the open file, so a
// second Lock in this process is refused too, and with the process,
// however it dies. Closing the file releases it. The file is never
// removed: removing it while another process opens it would let two
// processes lock two files of one name.
//
// The file is opened as safefs.OpenFile does: a symbolic link, a named
// pipe, or a file of another user put there is refused, never written.
// The pid is written when there is room for it: a full disk does not keep
// the lock from being taken (the next holder's error then names no pid).
func Lock(path, holder string) (*os.File, error) {
	f, err := safefs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &HeldError{Path: path, Dir: filepath.Dir(path), PID: readPID(path), Holder: holder}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
