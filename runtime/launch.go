package runtime

import (
	"context"

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
func (s *Supervisor) StartUntil(ctx context.Context, until spec.Condition, reached func(spec.Condition)) (State, error) {
	once := s.req.Plugin != nil && s.req.Plugin.Once.On
	err := s.startReporting(ctx, reached)
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
	return st, err
}

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
