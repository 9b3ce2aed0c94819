package elect

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"time"
)

// errLockBusy: another host holds the lock (or held a stale one that was
// just removed); try again after the herd backoff.
var errLockBusy = errors.New("lock held by another host")

// takeLock creates the lock file with O_CREATE|O_EXCL, the one step the
// share decides atomically (docs/semantics.md, "Floating plugins: the
// election"). The lock is held only while the lease is taken; release
// removes it. It records the holder for whoever looks at the directory;
// nothing reads it. Taking it, and removing it, give up at a deadline; a
// lock made after its taker gave up is removed at once.
func (e *Election) takeLock() (release func(), err error) {
	err = e.do("take the lock", e.ioDeadline(), func(abandoned func() bool) error {
		err := e.createLock()
		if err == nil && abandoned() {
			os.Remove(e.lockPath)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return func() {
		_ = e.do("remove the lock", e.ioDeadline(), func(func() bool) error { return os.Remove(e.lockPath) })
	}, nil
}

// createLock creates the lock file, or clears a stale one and returns
// errLockBusy.
func (e *Election) createLock() error {
	f, err := os.OpenFile(e.lockPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, FileMode)
	if errors.Is(err, fs.ErrExist) {
		if err := e.clearStaleLock(); err != nil {
			return fmt.Errorf("%w: %w", errLockBusy, err)
		}
		return errLockBusy
	}
	if err != nil {
		return fmt.Errorf("create lock: %w", err)
	}
	// The umask may have narrowed the mode; the others must read the lock
	// too (FileMode).
	err = f.Chmod(FileMode)
	if err == nil {
		_, err = f.WriteString(e.cfg.HostID + "\n")
	}
	// Closed at once: Windows refuses to remove an open file, and the lock is
	// the file's existence, not a handle.
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(e.lockPath)
		return fmt.Errorf("create lock: %w", err)
	}
	// A failed removal leaves the lock to turn stale; others clear it then.
	// The removal is by name: a holder stuck for longer than lockStale (a
	// hung share) could remove a newer contender's lock, a limit that is
	// accepted: two contenders inside then write the same epoch, and
	// renewal ends the one whose write was overwritten (Lease.supersedes).
	return nil
}

// clearStaleLock removes a lock left by a host that crashed while taking
// the lease, once older than lockStale (docs/semantics.md, "Floating
// plugins: the election"). The lock's age is its mtime against the mtime of
// a probe file written now in the same directory: both are stamped by the
// share, so neither this host's wall clock nor its skew enters. The lock is
// removed only if it is still the file that was judged stale; a lock made
// in between by a live contender is left alone.
func (e *Election) clearStaleLock() error {
	before, err := os.Stat(e.lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat lock: %w", err)
	}
	now, err := e.dirNow()
	if err != nil {
		return err
	}
	if now.Sub(before.ModTime()) <= e.cfg.LockStale {
		return nil
	}
	after, err := os.Stat(e.lockPath)
	if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		return nil
	}
	if err := os.Remove(e.lockPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale lock: %w", err)
	}
	return nil
}

// dirNow is the directory's own clock: the mtime of a file just created there.
func (e *Election) dirNow() (time.Time, error) {
	f, err := os.CreateTemp(e.cfg.Dir, e.cfg.Instance+".probe.*.tmp")
	if err != nil {
		return time.Time{}, fmt.Errorf("probe directory clock: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	os.Remove(f.Name())
	if err != nil {
		return time.Time{}, fmt.Errorf("probe directory clock: %w", err)
	}
	return fi.ModTime(), nil
}

// herdBackoff is how long a contender that lost waits before it looks
// again: 0.2 s + (seq mod 8) × 0.1 s (docs/semantics.md), seq the FNV-32a
// hash of the host id, so a room of hosts started together spreads over
// 0.2–0.9 s and each host always waits the same.
func herdBackoff(hostID string) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(hostID))
	return 200*time.Millisecond + time.Duration(h.Sum32()%8)*100*time.Millisecond
}
