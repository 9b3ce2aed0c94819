//go:build unix

package fence

import (
	"errors"
	"fmt"
	"os"

	"github.com/graftland/graft/internal/dirlock"
)

// lockFile takes the lock file at path (an flock, held until unlock, or
// until the process ends however it dies). Another holder is ErrInUse.
func lockFile(path string) (*os.File, error) {
	f, err := dirlock.Lock(path, "")
	var held *dirlock.HeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("%w: %v", ErrInUse, held)
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
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
