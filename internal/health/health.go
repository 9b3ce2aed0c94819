// Package health keeps the verdict of a plugin's liveness check (its
// spec's health:): healthy, unhealthy or starting (docs/semantics.md,
// "Health checks"). The checks run where the process runs
// (internal/ready.Health, in the placement's handle or on the runner);
// whoever decides what an unhealthy plugin becomes (the host's
// Supervisor) reads their results, wherever they were made, through a
// Tracker. It runs nothing itself.
package health

import "time"

// Status is a plugin's health.
type Status string

// The health of a plugin with a health check.
const (
	Starting  Status = "starting"  // no check has passed since its start, and it is not unhealthy
	Healthy   Status = "healthy"   // its last check passed
	Unhealthy Status = "unhealthy" // its last Failures checks failed
)

// Statuses lists every health status.
var Statuses = []Status{Starting, Healthy, Unhealthy}

// Result is one check's result.
type Result struct {
	// Err is why the check failed; nil when it passed.
	Err error
	At  time.Time
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
