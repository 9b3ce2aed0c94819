package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-multierror"
)

// Ladder is the stop order every placement follows (docs/stopping.md),
// written once: its steps are the placement's, its windows a Timing.
//
//	Signal ─► ShutdownTimeout ─► ExitWindow ─► Terminate ─► KillAfter ─► Kill ─► KillWait
//	   └───────── graceful ──────────┘  └──────────────── forced ────────────────┘
//
// Each wait ends early once Gone says the end is confirmed. A step left
// nil is skipped: no Signal is a stop forced from the start (the
// runner's forced stop), no Terminate goes from the exit window straight
// to Kill (a worker). The runner's interrupt, then kill after grace, is
// the same ladder with no exit window and KillAfter its grace.
type Ladder struct {
	Timing Timing
	// Signal starts the graceful stop: the stop signal, stdin closed.
	Signal func() error
	// Terminate is the first forced step (SIGTERM to the family).
	Terminate func() error
	// Kill is the last forced step (SIGKILL, the module closed).
	Kill func() error
	// Gone waits up to d for the end to be confirmed, or until cut is
	// closed (a nil cut: never), and reports whether it was.
	Gone func(d time.Duration, cut <-chan struct{}) bool
	// KillWait bounds the wait after Kill.
	KillWait time.Duration

	// Hurry, once closed, cuts the graceful part short: the caller's ctx
	// ended, or a forced stop joined this one.
	Hurry <-chan struct{}
	// HurryKills makes a hurried stop skip Terminate and go to Kill at
	// once (a Handle's Stop whose ctx ends); otherwise a hurried stop
	// goes on with Terminate and KillAfter (the runner's forced stop).
	HurryKills bool
	// CutShort is the cause a hurried stop reports; nil: none.
	CutShort error
	// Missed is the cause a stop reports that missed the exit window and
	// was not hurried (a LocalTerminationTimeout); nil: none.
	Missed error
	// StillRunning is the cause a stop reports whose end Gone did not
	// confirm within KillWait of Kill; nil: "still running KillWait after
	// SIGKILL".
	StillRunning error

	// Forcing, when set, is called once the graceful part is over,
	// before the forced part begins.
	Forcing func()
	// Killing, when set, is called just before Kill.
	Killing func()
}

// Run carries the stop out and returns its outcome: Exited when the end
// came within the graceful part, Killed when force was needed and the end
// was confirmed, Unconfirmed when Gone did not confirm it within KillWait
// of Kill. Its causes are nil for Exited: a signal that failed to reach a
// plugin that ended all the same is no failure.
func (l Ladder) Run() (Outcome, *multierror.Error) {
	var causes *multierror.Error
	fail := func(err error) {
		if err != nil {
			causes = multierror.Append(causes, err)
		}
	}
	start := time.Now()
	graceful := start.Add(l.Timing.ShutdownTimeout)
	window := graceful.Add(l.Timing.ExitWindow)
	if l.Signal != nil {
		fail(l.Signal())
		if l.goneBy(graceful, l.Hurry) || l.goneBy(window, l.Hurry) {
			return Exited, nil
		}
	}
	hurried := l.hurried()
	// KillAfter counts from the end of the exit window, or from now when
	// there was none to wait out.
	if l.Signal == nil || hurried {
		window = time.Now()
	}
	if l.Forcing != nil {
		l.Forcing()
	}
	if hurried {
		fail(l.CutShort)
	} else {
		fail(l.Missed)
	}
	if l.Terminate != nil && !(hurried && l.HurryKills) {
		fail(l.Terminate())
		var cut <-chan struct{}
		if l.HurryKills {
			cut = l.Hurry
		}
		if l.goneBy(window.Add(l.Timing.KillAfter), cut) {
			return Killed, causes
		}
	}
	if l.Killing != nil {
		l.Killing()
	}
	fail(l.Kill())
	if l.Gone(l.KillWait, nil) {
		return Killed, causes
	}
	if l.StillRunning != nil {
		fail(l.StillRunning)
	} else {
		fail(fmt.Errorf("still running %s after SIGKILL", l.KillWait))
	}
	return Unconfirmed, causes
}

// goneBy is Gone until a deadline.
func (l Ladder) goneBy(deadline time.Time, cut <-chan struct{}) bool {
	return l.Gone(max(time.Until(deadline), 0), cut)
}

func (l Ladder) hurried() bool {
	select {
	case <-l.Hurry:
		return true
	default:
		return false
	}
}

// ErrCutShort is the cause a Handle's Stop reports when its ctx ended
// and the graceful part was cut short.
var ErrCutShort = errors.New("stop cut short: its context ended")

// GoneOn is a Ladder's Gone for an end that a channel's closing confirms.
// An end already confirmed wins over a deadline or a cut.
func GoneOn(done <-chan struct{}) func(time.Duration, <-chan struct{}) bool {
	return func(d time.Duration, cut <-chan struct{}) bool {
		select {
		case <-done:
			return true
		default:
		}
		t := time.NewTimer(max(d, 0))
		defer t.Stop()
		select {
		case <-done:
			return true
		case <-t.C:
		case <-cut:
		}
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}
