package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/graftland/graft/spec"
)

// StartUntil starts the plugin (Start) and returns once it has gone as
// far as a start goes: ready, or healthy when until says so; a one-shot,
// whatever until says, once it completed, its retries waited through
// (docs/semantics.md, "Dependency conditions" and "One-shot plugins").
// This is the one place that decides how far. reached is called with
// each condition on the way: started as soon as the process runs (while
// its ready check still runs), then ready, then healthy; a one-shot's
// completion is its step's success, which releases what waits on it.
// The State is the plugin's once its start returned: the run's identity
// and pid, which a one-shot no longer has when it completes.
//
// Cancelling ctx ends the waits, not the start: the start under way goes
// on to its end (its ready check has its own timeout), and the plugin
// keeps running; StartUntil then returns a *WaitEndedError with ctx's
// cause. A one-shot's own bound is its once.timeout (deadline.go).
func (s *Supervisor) StartUntil(ctx context.Context, until spec.Condition, reached func(spec.Condition)) (State, error) {
	once := s.req.Plugin != nil && s.req.Plugin.Once.On
	err := s.startReporting(context.WithoutCancel(ctx), reached)
	st := s.State()
	if err != nil && !(once && !st.NextRetry.IsZero()) {
		return st, err // a one-shot waits through its retries, a failed start's too
	}
	if err == nil {
		reached(spec.UntilReady)
	}
	goal := until
	if once {
		goal = spec.UntilCompleted
	}
	switch goal {
	case spec.UntilHealthy:
		if err = s.Await(ctx, goal); err == nil {
			reached(goal)
		}
	case spec.UntilCompleted:
		err = s.Await(ctx, goal)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = &WaitEndedError{Plugin: s.req.Name, Until: goal, Cause: context.Cause(ctx)}
	}
	return st, err
}

// WaitEndedError is a start whose wait ended before its plugin got as
// far as the start goes (StartUntil): the plugin was left running.
type WaitEndedError struct {
	Plugin string
	Until  spec.Condition
	// Cause is why the wait ended: the client went away, graft down.
	Cause error
}

func (e *WaitEndedError) Error() string {
	return fmt.Sprintf("stopped waiting for %s to be %s (%v); it was left running", e.Plugin, e.Until, e.Cause)
}

func (e *WaitEndedError) Unwrap() error { return e.Cause }

// startReporting starts the plugin and calls reached(started) as soon as
// its process has started, so that the steps waiting for that begin
// while its ready check still runs.
func (s *Supervisor) startReporting(ctx context.Context, reached func(spec.Condition)) error {
	actx, cancel := context.WithCancel(ctx)
	seen := make(chan bool, 1)
	go func() { seen <- s.Await(actx, spec.UntilStarted) == nil }()
	err := s.Start(ctx)
	cancel()
	if <-seen || err == nil {
		reached(spec.UntilStarted)
	}
	return err
}
