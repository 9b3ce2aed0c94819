//go:build unix

package host

import (
	"os"
	"path/filepath"

	"github.com/graftland/graft/internal/dirlock"
)

// lockDir takes the state dir's lock for this host, and writes its pid in
// it (a *dirlock.HeldError naming the host that holds it, if another
// does). The lock is an flock: it goes with the process, however it dies.
func lockDir(dir string) (*os.File, error) {
	return dirlock.Lock(filepath.Join(dir, lockFile), "host")
}
