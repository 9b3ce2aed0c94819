package runtime

import (
	"context"
	"fmt"

	"github.com/graftland/graft/internal/health"
)

// The Supervisor's part of health checks (docs/semantics.md, "Health
// checks"): it reads the results of the checks the placement runs where
// the process runs (HealthSource), keeps the verdict, and replaces a
// plugin found unhealthy: the decision is the host's, for every
// placement.

// monitor follows the health of h, the plugin's new handle, when its spec
// has a health check. Called with s.mu held.
func (s *Supervisor) monitor(h Handle) {
	hc := s.req.Plugin.Health
	if hc == nil {
		return
	}
	tr := health.NewTracker(hc.Failures)
	s.health = tr
	s.state.Health = tr.Status()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		results, ran := s.results(ctx, h)
		defer func() { cancel(); <-ran }()
		for {
			select {
			case r, ok := <-results:
				if !ok || s.observe(h, tr, r) {
					return
				}
			case <-h.Done():
				return
			}
		}
	}()
}

// results is where the results of h's checks come from: its placement
// runs them where the process runs (HealthSource). A handle that cannot
// gives none, and the plugin stays starting. ran is closed at once:
// nothing runs here for them.
func (s *Supervisor) results(_ context.Context, h Handle) (<-chan health.Result, <-chan struct{}) {
	ran := make(chan struct{})
	close(ran)
	if hs, ok := h.(HealthSource); ok {
		return hs.HealthResults(), ran
	}
	return nil, ran
}

// observe takes one result of h's checks, logs a change of health, and
// when it makes the plugin unhealthy replaces it. It reports true when
// the monitor of h is done: h is no longer the plugin's, or is replaced.
func (s *Supervisor) observe(h Handle, tr *health.Tracker, r health.Result) bool {
	s.mu.Lock()
	if s.handle != h || s.stopping || s.health != tr {
		s.mu.Unlock()
		return true // h is gone, or its health checks changed (Update)
	}
	from, to := tr.Observe(r)
	s.state.Health, s.state.HealthError = to, tr.LastError()
	if to == health.Healthy {
		s.unhealthyRow = 0
	}
	if from != to {
		s.logHealth(from, to, tr.LastError())
		s.notify()
	}
	s.mu.Unlock()
	if to != health.Unhealthy {
		return false
	}
	s.replace(h, fmt.Sprintf("unhealthy: %d health checks failed in a row; the last: %s", s.req.Plugin.Health.Failures, tr.LastError()))
	return true
}

// logHealth logs a change of health. Called with s.mu held.
func (s *Supervisor) logHealth(from, to health.Status, lastErr string) {
	if s.req.Log == nil {
		return
	}
	attrs := []any{"plugin", s.req.Name, "from", string(from), "to", string(to),
		"instance", s.state.Identity.ID, "generation", s.state.Identity.Generation}
	if to == health.Healthy {
		s.req.Log.Info("health", attrs...)
		return
	}
	s.req.Log.Warn("health", append(attrs, "err", lastErr)...)
}

// replace stops h, found unhealthy, through its stop sequence, and starts
// the plugin again: at once the first time since a check last passed, as
// a restart; after that on its retry schedule, as for a failure, and
// without one it stays failed.
func (s *Supervisor) replace(h Handle, why string) {
	h.Stop(context.Background()) // the outcome is the old process's: it is replaced whatever it was
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || s.handle != h {
		return
	}
	s.lastExit = h.Exit()
	s.handle, s.state.PID = nil, 0
	s.set(Failed, why)
	s.unhealthyRow++
	if s.unhealthyRow > 1 {
		s.scheduleRetry()
		return
	}
	s.state.Restarts++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.Start(context.Background())
	}()
}

// healthy reports whether the current run's last health check passed.
// Called with s.mu held.
func (s *Supervisor) healthy() bool { return s.health != nil && s.health.Status() == health.Healthy }
