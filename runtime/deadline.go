package runtime

import (
	"context"
	"fmt"
	"time"
)

// A one-shot has once.timeout to complete, from its first start, its
// retries included (docs/semantics.md, "One-shot plugins"): past it, the
// Supervisor stops it through its stop sequence and marks it failed, with
// no retry. The deadline belongs to the plugin, not to whoever waits for
// it: a one-shot whose apply stopped waiting (its client went away, or
// graft down preempted it) is bounded all the same.

// armDeadline arms a one-shot's deadline at its first start. Called with
// s.mu held.
func (s *Supervisor) armDeadline() {
	p := s.req.Plugin
	if p == nil || !p.Once.On || p.Once.Timeout.Std() <= 0 || s.deadline != nil {
		return
	}
	s.wg.Add(1)
	s.deadline = time.AfterFunc(p.Once.Timeout.Std(), s.expire)
}

// disarmDeadline stops the deadline's timer, once the one-shot completed
// or is stopped. Called with s.mu held.
func (s *Supervisor) disarmDeadline() {
	if s.deadline != nil && s.deadline.Stop() {
		s.wg.Done() // its expire will not run
	}
}

// complete records that the one-shot completed. Called with s.mu held.
func (s *Supervisor) complete() {
	s.disarmDeadline()
	s.set(Completed, "")
}

// expire ends a one-shot that did not complete in time: any retry armed
// is cancelled, a start under way aborted, the process stopped through
// its stop sequence, and the plugin marked failed for good.
func (s *Supervisor) expire() {
	defer s.wg.Done()
	s.mu.Lock()
	if s.stopping || s.state.Status == Completed {
		s.mu.Unlock()
		return
	}
	s.expired = true // no retry from now on (scheduleRetry)
	s.abortPending()
	s.state.NextRetry = time.Time{}
	h := s.handle
	s.mu.Unlock()
	if h != nil {
		h.Stop(context.Background()) // its own stop sequence, with its timeouts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || s.state.Status == Completed {
		return // it completed, or was stopped, meanwhile
	}
	if h != nil && s.handle == h {
		s.lastExit = h.Exit()
		s.handle = nil
	}
	s.state.PID, s.state.NextRetry = 0, time.Time{}
	s.set(Failed, s.expiredError())
}

// expiredError is the failure of a one-shot past its deadline.
func (s *Supervisor) expiredError() string {
	return fmt.Sprintf("did not complete within %s (once.timeout): stopped", s.req.Plugin.Once.Timeout)
}
