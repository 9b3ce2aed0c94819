// Package dirlock holds the lock file of a directory that one process at
// a time may own, such as a host's or a runner's state dir.
package dirlock

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/graftland/graft/internal/safefs"
)

// HeldError is returned when another process holds the lock: one error
// for every lock of graft's, which names what holds it when the caller
// said (a host's or a runner's state dir).
type HeldError struct {
	// Path is the lock file.
	Path string
	// Dir is the directory it locks, the one the lock file is in.
	Dir string
	// PID is the pid the holder wrote in it; 0 if it could not be read.
	PID int
	// Holder is what holds it, as the caller of Lock named it: "host" or
	// "runner" for a state dir; empty for a lock of another kind.
	Holder string
}

func (e *HeldError) Error() string {
	switch {
	case e.Holder == "" && e.PID == 0:
		return fmt.Sprintf("another process holds %s", e.Path)
	case e.Holder == "":
		return fmt.Sprintf("pid %d holds %s", e.PID, e.Path)
	case e.PID == 0:
		return fmt.Sprintf("another %s holds the state dir %s", e.Holder, e.Dir)
	}
	return fmt.Sprintf("another %s (pid %d) holds the state dir %s", e.Holder, e.PID, e.Dir)
}

// Hint names the command that shows or stops the holder of a state dir.
func (e *HeldError) Hint() string {
	switch e.Holder {
	case "host":
		return "graft status --state-dir " + e.Dir + " (to see it), or graft down (to stop it)"
	case "runner":
		stop := "stop that graft runner (SIGTERM)"
		if e.PID != 0 {
			stop = fmt.Sprintf("stop it (kill -TERM %d)", e.PID)
		}
		return stop + ", or give this graft runner another --state-dir"
	}
	return ""
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
