// Package health runs a plugin's liveness check (its spec's health:) and
// keeps its verdict: healthy, unhealthy or starting (docs/semantics.md,
// "Health checks"). The checks run where the process runs; whoever
// decides what an unhealthy plugin becomes (the host's Supervisor) reads
// the results, wherever they were made, through a Tracker.
package health

import (
	"context"
	"errors"
	"time"

	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/spec"
)

// Status is a plugin's health.
type Status string

// The health of a plugin with a health check.
const (
	Starting  Status = "starting"  // no check has passed since its start, and it is not unhealthy
	Healthy   Status = "healthy"   // its last check passed
	Unhealthy Status = "unhealthy" // its last Failures checks failed
)

// Result is one check's result.
type Result struct {
	// Err is why the check failed; nil when it passed.
	Err error
	At  time.Time
}

// Run checks hc every interval, once startPeriod has passed, until ctx
// ends, and reports each result. One check runs at a time: the next
// begins an interval after this one began, or at once when this one took
// longer, so a check never runs in parallel with itself. exec runs an
// exec check as the plugin runs (ready.Exec); nil refuses one.
func Run(ctx context.Context, hc *spec.Health, exec ready.Exec, report func(Result)) {
	if exec == nil {
		exec = func(context.Context, []string) error {
			return errors.New("exec checks cannot run for this placement")
		}
	}
	if !sleep(ctx, hc.StartPeriod.Std()) {
		return
	}
	probe := hc.Probe()
	for {
		began := time.Now()
		cctx, cancel := context.WithTimeout(ctx, hc.Timeout.Std())
		err := ready.Probe(cctx, probe, exec)
		if err != nil && ctx.Err() == nil && (cctx.Err() != nil || timedOut(err)) {
			err = &TimeoutError{Timeout: hc.Timeout.Std(), Last: err}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		report(Result{Err: err, At: time.Now()})
		if !sleep(ctx, hc.Interval.Std()-time.Since(began)) {
			return
		}
	}
}

// TimeoutError is a check that did not answer within its timeout.
type TimeoutError struct {
	Timeout time.Duration
	Last    error
}

func (e *TimeoutError) Error() string {
	return "no answer within " + spec.FromStd(e.Timeout).String() + ": " + e.Last.Error()
}

func (e *TimeoutError) Unwrap() error { return e.Last }

// timedOut reports whether err is a timeout: a dial or request that the
// check's deadline ended, sometimes reported just before ctx's own end.
func timedOut(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Tracker turns results into a verdict: unhealthy after failures failed
// checks in a row, healthy at a passing one.
type Tracker struct {
	failures int // the spec's
	row      int // failed checks in a row
	status   Status
	lastErr  string
	passed   bool
}

// NewTracker returns the tracker of a fresh start: starting.
func NewTracker(failures int) *Tracker {
	return &Tracker{failures: max(failures, 1), status: Starting}
}

// Observe takes a result and returns the status before and after it.
func (t *Tracker) Observe(r Result) (from, to Status) {
	from = t.status
	if r.Err == nil {
		t.row, t.passed, t.status = 0, true, Healthy
		return from, t.status
	}
	t.row++
	t.lastErr = r.Err.Error()
	if t.row >= t.failures {
		t.status = Unhealthy
	}
	return from, t.status
}

// Status is the verdict so far.
func (t *Tracker) Status() Status { return t.status }

// LastError is the error of the last failed check; empty before one.
func (t *Tracker) LastError() string { return t.lastErr }

// Passed reports whether any check has passed since the start.
func (t *Tracker) Passed() bool { return t.passed }
