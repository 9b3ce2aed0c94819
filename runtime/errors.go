package runtime

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"
)

// Outcome is how a stop ended (docs/semantics.md and docs/stopping.md,
// "Outcomes").
type Outcome string

// The outcomes of a stop.
const (
	// Exited: the plugin stopped and its exit was confirmed.
	Exited Outcome = "Exited"
	// Killed: the plugin was killed and the kill confirmed; some of its
	// finalizers may not have finished.
	Killed Outcome = "Killed"
	// Unconfirmed: no one could confirm the exit; it may still be running
	// (RemoteTerminationUnconfirmed, the name docs/semantics.md gives it).
	Unconfirmed Outcome = "RemoteTerminationUnconfirmed"
)

// CleanupError is what a stop reports when making sure the plugin was gone
// took more than the plugin allowed for (docs/stopping.md, "Outcomes"). Its
// causes, aggregated with go-multierror, are found with errors.As: a
// *LocalTerminationTimeout, a *RemoteTerminationUnconfirmed, or the error
// of a signal or wait that failed.
type CleanupError struct {
	Plugin  string
	Outcome Outcome
	Causes  *multierror.Error
}

// Confirmed reports whether the plugin is known to be gone: the stop was
// forced, but its end was confirmed (Exited or Killed). Such a stop is a
// completed stop, and what it reports is a warning; only an unconfirmed
// one (RemoteTerminationUnconfirmed) fails (docs/stopping.md).
func (e *CleanupError) Confirmed() bool { return e.Outcome != Unconfirmed }

func (e *CleanupError) Error() string {
	var causes []string
	for _, c := range e.Causes.WrappedErrors() {
		causes = append(causes, c.Error())
	}
	return fmt.Sprintf("stop %s: %s: %s", e.Plugin, e.Outcome, strings.Join(causes, "; "))
}

// Unwrap returns the causes, so errors.As and errors.Is look into each.
func (e *CleanupError) Unwrap() []error { return e.Causes.WrappedErrors() }

// LocalTerminationTimeout reports a local process or worker that missed
// its one-second window to exit after the graceful stop, and had to be
// terminated, even when the termination then worked. It usually means a
// timer, socket or other handle stayed open after the finalizers ran.
type LocalTerminationTimeout struct {
	Plugin   string `json:"plugin"`
	Instance string `json:"instance"`
	// Window is the exit window that was missed (1 second).
	Window time.Duration `json:"window"`
}

func (e *LocalTerminationTimeout) Error() string {
	return fmt.Sprintf("LocalTerminationTimeout: %s (instance %s) did not exit within %s of its graceful stop and was terminated",
		e.Plugin, e.Instance, e.Window)
}

// RemoteTerminationUnconfirmed reports a remote stop whose end no one
// could confirm: the host lost contact with the runner, or the runner did
// not confirm within the lease plus margin. The process may still be
// running; waiting proves nothing. The runner refuses a replacement of the
// instance until it has confirmed the exit.
type RemoteTerminationUnconfirmed struct {
	Plugin     string `json:"plugin"`
	Instance   string `json:"instance"`
	Generation int64  `json:"generation"`
	Runner     string `json:"runner"`
	// Cause is why it could not be confirmed. Across the host's API it
	// is known by its message only.
	Cause error `json:"-"`
}

func (e *RemoteTerminationUnconfirmed) Error() string {
	return fmt.Sprintf("%s (instance %s, generation %d) may still be running on runner %s: no confirmation: %v",
		e.Plugin, e.Instance, e.Generation, e.Runner, e.Cause)
}

func (e *RemoteTerminationUnconfirmed) Unwrap() error { return e.Cause }

// Hint tells the operator what to do about it.
func (e *RemoteTerminationUnconfirmed) Hint() string {
	return fmt.Sprintf("check runner %s: once it answers, graft apply (or graft down) asks it again and confirms the stop", e.Runner)
}

// RemoteForced reports a remote process that was not gone within its
// graceful stop: the runner interrupted it (SIGTERM) and, if it was not
// gone grace later, killed it (SIGKILL). Its end was confirmed; some of
// its finalizers may not have finished.
type RemoteForced struct {
	Plugin     string `json:"plugin"`
	Instance   string `json:"instance"`
	Generation int64  `json:"generation"`
	Runner     string `json:"runner"`
	// Killed: it outlived the interrupt and was killed after grace; false
	// when it ended at the interrupt.
	Killed bool `json:"killed"`
}

func (e *RemoteForced) Error() string {
	end := "and it ended then"
	if e.Killed {
		end = "then killed it after grace"
	}
	return fmt.Sprintf("%s (instance %s, generation %d) was not gone within its graceful stop; runner %s interrupted it (SIGTERM), %s",
		e.Plugin, e.Instance, e.Generation, e.Runner, end)
}

// StartError is a start that failed after the plugin ran: it exited before
// it was ready, or was not ready in time. It carries the exit and the last
// lines of output, which usually say why.
type StartError struct {
	Plugin string `json:"plugin"`
	// Reason is what went wrong, such as "exited before it was ready" or
	// "not ready after 30 seconds: dial tcp 127.0.0.1:8080: connection
	// refused".
	Reason string `json:"reason"`
	Exit   Exit   `json:"exit"`
}

func (e *StartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "start %s: %s", e.Plugin, e.Reason)
	switch {
	case e.Exit.At.IsZero():
	case e.Exit.Requested:
		// It did not end by itself: graft stopped it, as a failed start.
		fmt.Fprintf(&b, "; graft stopped it (%s)", e.Exit)
	default:
		fmt.Fprintf(&b, " (%s)", e.Exit)
	}
	switch {
	case len(e.Exit.Tail) > 0:
		b.WriteString("; last output:\n  ")
		b.WriteString(strings.Join(e.Exit.Tail, "\n  "))
	case !e.Exit.At.IsZero():
		b.WriteString("; it wrote no output (a program that buffers its output when it is not on a terminal may need to flush it)")
	}
	return b.String()
}

// Hint tells the operator what to do about it.
func (e *StartError) Hint() string { return "see its output: graft logs " + e.Plugin }
