// Package dirlock holds the lock file of a directory that one process at
// a time may own, such as a host's or a runner's state dir.
package dirlock

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/graftland/graft/internal/safefs"
)

// HeldError is returned when another process holds the lock.
type HeldError struct {
	// Path is the lock file.
	Path string
	// PID is the pid the holder wrote in it; 0 if it could not be read.
	PID int
}

func (e *HeldError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("another process holds %s", e.Path)
	}
	return fmt.Sprintf("pid %d holds %s", e.PID, e.Path)
}

// readPID reads the pid a holder wrote in its lock file.
func readPID(path string) int {
	b, err := safefs.ReadFile(path, 64)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
