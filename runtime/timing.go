package runtime

import (
	"io"
	"time"

	"github.com/graftland/graft/spec"
)

// Timing holds the windows of a stop (docs/semantics.md, "Windows and
// defaults"). plugins.yaml cannot change them; the Go API can, and tests
// shorten them.
type Timing struct {
	// ShutdownTimeout bounds the graceful stop: 5 seconds.
	ShutdownTimeout time.Duration
	// ExitWindow is the time a local process or worker has to exit after
	// the graceful stop before it is terminated: 1 second, fixed.
	ExitWindow time.Duration
	// KillAfter is the time from terminating a local process (SIGTERM to
	// its group) to killing it (SIGKILL): 1 second, fixed.
	KillAfter time.Duration
}

// DefaultTiming is the fixed one of docs/semantics.md: 5 seconds, then 1
// second, then 1 second.
func DefaultTiming() Timing {
	return Timing{ShutdownTimeout: spec.ShutdownTimeout, ExitWindow: time.Second, KillAfter: time.Second}
}

// Output receives a plugin's stdout and stderr and keeps their last lines;
// internal/output's Log is the one the host uses.
type Output interface {
	io.Writer
	// Tail returns the last lines written.
	Tail() []string
}
