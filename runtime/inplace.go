package runtime

import (
	"fmt"
	"reflect"

	"github.com/graftland/graft/spec"
)

// Reloader is a Handle whose main process can be sent a signal without
// stopping it: onChange: reload (docs/semantics.md, "Reload and
// in-place updates"). A local process is one.
type Reloader interface {
	Handle
	// Reload sends sig (a spec signal name, such as SIGHUP) to the main
	// process alone, not its family. A process that dies of it ends as
	// one that exited on its own.
	Reload(sig string) error
}

// StopSignalSetter is a Handle whose graceful stop's signal can change
// while it runs. Where a handle is not one, a new stopSignal applies from
// its next start.
type StopSignalSetter interface {
	Handle
	SetStopSignal(sig string)
}

// Update gives the supervisor p, its plugin's new spec, which differs
// only in what shapes graft's handling of the process (retry, ready,
// stopSignal, reloadSignal, uses): the next restarts follow p, and the
// running process's stop uses p's stopSignal where its handle allows.
// The process keeps running.
//
// A change of health takes effect at once where the handle allows
// (HealthSetter): its checks start again with the new settings, with a
// new verdict, as at a start.
func (s *Supervisor) Update(p *spec.Plugin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.req.Launch.Health
	s.req.Plugin, s.req.Launch = p, p.Launch()
	if h, ok := s.handle.(HealthSetter); ok && s.state.Status == Running && !reflect.DeepEqual(was, s.req.Launch.Health) {
		h.SetHealth(s.req.Launch.Health)
		s.health, s.state.Health, s.state.HealthError = nil, "", ""
		s.monitor(h) // the old monitor ends with its checks' channel
		s.notify()
	}
	s.retry = p.Retry
	if d, ok := s.placement.(Retrier); ok && s.retry == nil {
		s.retry = d.DefaultRetry()
	}
	if h, ok := s.handle.(StopSignalSetter); ok && p.StopSignal != "" {
		h.SetStopSignal(p.StopSignal)
	}
}

// Reload is Update, then p's reloadSignal (default SIGHUP) to the running
// process. A plugin that is not running, or whose placement cannot
// signal it, fails the reload; the update stays.
func (s *Supervisor) Reload(p *spec.Plugin) error {
	s.Update(p)
	s.mu.Lock()
	h, st := s.handle, s.state.Status
	s.mu.Unlock()
	if h == nil || st != Running {
		return fmt.Errorf("reload %s: it is %s, not running", p.Name, st)
	}
	r, ok := h.(Reloader)
	if !ok {
		return fmt.Errorf("reload %s: its placement cannot signal it; change the file with onChange: replace", p.Name)
	}
	sig := p.ReloadSignal
	if sig == "" {
		sig = spec.DefaultReloadSignal
	}
	if err := r.Reload(sig); err != nil {
		return fmt.Errorf("reload %s: %w", p.Name, err)
	}
	return nil
}
