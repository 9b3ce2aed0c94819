//go:build unix

package contentdigest

import (
	"os"
	"syscall"
	"time"
)

// holdShared takes a shared flock of the directory dir, which every parse
// holds while it digests; one that cannot be taken (the directory is
// gone) holds nothing, and the parse goes on: a prune then removes only
// what a parse reads again.
func holdShared(dir string) (release func()) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() } // closing the last fd releases the flock
}

// holdAlone takes an exclusive flock of dir, trying until wait has
// passed; false when shared holds were there all along.
func holdAlone(dir string, wait time.Duration) (release func(), ok bool) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}, true // nothing to guard: Prune finds no directory
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, true
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			// No flock here (some network file systems): holdShared
			// held nothing either.
			f.Close()
			return func() {}, true
		}
		if !time.Now().Before(deadline) {
			f.Close()
			return nil, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
