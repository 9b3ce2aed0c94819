package elect

import (
	"context"
	"time"
)

// Clock is the time an election runs on (after tailscale's tstime.Clock),
// injected so tests order events without sleeping. The election only takes
// intervals between two of its readings; it never sets its wall time
// against a file's mtime, so a host whose wall clock is off still elects
// correctly (docs/semantics.md, "Floating plugins: the election").
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer an election uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

type realClock struct{}

// Now carries a monotonic reading, so the intervals taken from it ignore
// wall clock steps.
func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// Skewed is real time with the wall clock off by d, as on a machine whose
// clock is wrong. Its readings carry no monotonic part, so anything that
// compared them with a file's mtime would be off by d: the hosts of the
// end-to-end tests run on it to show that nothing does.
func Skewed(d time.Duration) Clock { return skewed{d} }

type skewed struct{ d time.Duration }

func (s skewed) Now() time.Time                 { return time.Now().Round(0).Add(s.d) }
func (s skewed) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Sleep waits d on c, or until ctx ends, and then returns ctx's cause.
// Both backends and the floating placement wait with it, so that a test's
// fake clock schedules every wait of an election.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C():
		return nil
	}
}
