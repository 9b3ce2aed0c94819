//go:build unix

package host

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/graftland/graft/internal/dirlock"
)

// lockDir takes the state dir's lock for this host, and writes its pid in
// it. The lock is an flock: it goes with the process, however it dies.
func lockDir(dir string) (*os.File, error) {
	f, err := dirlock.Lock(filepath.Join(dir, lockFile))
	var held *dirlock.HeldError
	if errors.As(err, &held) {
		return nil, &HeldError{Dir: dir, PID: held.PID}
	}
	return f, err
}
