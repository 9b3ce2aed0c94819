package runtime

import (
	"context"
	"fmt"

	"github.com/graftland/graft/spec"
)

// Await returns once the plugin has reached cond (started, ready,
// healthy, completed: docs/semantics.md, "Dependency conditions"), or
// with an error once it cannot: it failed with no retry due, or is being
// stopped. A plugin that fails with a retry due is waited for through the
// retry. Cancelling ctx returns ctx's error.
func (s *Supervisor) Await(ctx context.Context, cond spec.Condition) error {
	for {
		s.mu.Lock()
		done, err := s.reached(cond)
		changed := s.changed
		s.mu.Unlock()
		if done || err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reached reports whether the plugin has reached cond, or why it will
// not. Called with s.mu held.
func (s *Supervisor) reached(cond spec.Condition) (bool, error) {
	st := s.state.Status
	switch {
	case st == Completed:
		return true, nil // it was started, ready and, if checked, healthy before
	case cond == spec.UntilStarted && (s.started || st == Running):
		return true, nil
	case cond == spec.UntilReady && st == Running:
		return true, nil
	case cond == spec.UntilHealthy && st == Running && s.healthy():
		return true, nil
	case s.stopping:
		return false, fmt.Errorf("%s was stopped before it was %s", s.req.Name, cond)
	case (st == Failed || st == StopUnconfirmed) && s.state.NextRetry.IsZero():
		return false, fmt.Errorf("%s failed before it was %s: %s", s.req.Name, cond, s.state.LastError)
	}
	return false, nil
}
