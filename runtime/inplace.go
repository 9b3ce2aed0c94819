package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/spec"
)

// Reloader is a Handle whose process can take a new config without a
// restart: onChange: reload (docs/semantics.md, "Reloads"). A local
// process is one, a runner's too.
type Reloader interface {
	Handle
	// Reload carries out l.Reload on the running process and checks that
	// it took: its check first (nothing is signalled when it fails), then
	// its signal to the main process alone or its command, then the
	// process must still run and pass l's ready probe, and its health
	// probe, within the ready timeout. A process that dies of it ends as
	// one that exited on its own.
	Reload(ctx context.Context, l launch.Spec) error
}

// ReloadUnconfirmed is a reload that was carried out, its signal sent or
// its command run, but not shown to have taken: the process then failed
// its checks, or died. Which config is in effect, the old or the new, is
// not known (docs/semantics.md, "Reloads").
type ReloadUnconfirmed struct{ Err error }

func (e *ReloadUnconfirmed) Error() string { return e.Err.Error() }
func (e *ReloadUnconfirmed) Unwrap() error { return e.Err }

// StopSignalSetter is a Handle whose graceful stop's signal can change
// while it runs. Where a handle is not one, a new stopSignal applies from
// its next start.
type StopSignalSetter interface {
	Handle
	SetStopSignal(sig string)
	// SetStopMode makes mode (launch.StopModes; empty: group) who gets
	// the signal.
	SetStopMode(mode string)
}

// TermSetter is a Handle whose placement can stop its process at a
// deadline by means outside this process (the init of the host's PID
// namespace), so that the stop happens even while this process cannot
// run: a floating leader's plugin at the end of its term, its host frozen
// (docs/semantics.md, "Floating plugins: the election").
type TermSetter interface {
	Handle
	// SetTerm has the process stopped in d unless SetTerm comes again
	// first; d of 0 ends the term. An error says its placement cannot.
	SetTerm(d time.Duration) error
}

// SetTerm sets the term of the plugin's current process (TermSetter),
// and of every process it starts later as soon as it runs, before its
// start returns (Request.Started): a host frozen while its plugin starts,
// or passes its ready check, leaves the process a term all the same. An
// error when its placement cannot end a term.
func (s *Supervisor) SetTerm(d time.Duration) error {
	s.termMu.Lock()
	defer s.termMu.Unlock()
	s.mu.Lock()
	s.term = time.Time{}
	if d > 0 {
		s.term = time.Now().Add(d)
	}
	h := s.handle
	if h == nil {
		h = s.launched
	}
	s.mu.Unlock()
	if h == nil {
		return nil
	}
	return setTerm(h, d)
}

// setTerm sets the term of h's process to d (TermSetter).
func setTerm(h Handle, d time.Duration) error {
	t, ok := h.(TermSetter)
	if !ok {
		return errors.New("its placement cannot end a term")
	}
	return t.SetTerm(d)
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
func (s *Supervisor) Update(ctx context.Context, p *spec.Plugin) error {
	s.mu.Lock()
	was := s.req.Launch.Health
	s.req.Plugin, s.req.Launch = p, p.Launch()
	s.retry = p.Retry
	if d, ok := s.placement.(Retrier); ok && s.retry == nil {
		s.retry = d.DefaultRetry()
	}
	if h, ok := s.handle.(StopSignalSetter); ok {
		if p.StopSignal != "" {
			h.SetStopSignal(p.StopSignal)
		}
		h.SetStopMode(p.StopMode)
	}
	h, ok := s.handle.(HealthSetter)
	if !ok || s.state.Status != Running || reflect.DeepEqual(was, s.req.Launch.Health) {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	// Outside the lock: a runner's checks change through a request.
	if err := h.SetHealth(ctx, s.req.Launch.Health); err != nil {
		return fmt.Errorf("update %s: change its health checks: %w", p.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handle == h { // a restart meanwhile started with the new checks
		s.health, s.state.Health, s.state.HealthError = nil, "", ""
		s.monitor(h) // the old monitor ends at its next result
		s.notify()
	}
	return nil
}

// Reload is Update, then p's reload (ReloadProcess). A plugin that is not
// running, whose placement cannot reload it, or whose reload fails,
// fails; the update stays.
func (s *Supervisor) Reload(ctx context.Context, p *spec.Plugin) error {
	if err := s.Update(ctx, p); err != nil {
		return err
	}
	l := p.Launch()
	if l.Reload == nil {
		return fmt.Errorf("reload %s: it declares no reload (reload: or reloadSignal:)", p.Name)
	}
	if err := s.ReloadProcess(ctx, l.WithDefaults()); err != nil {
		return fmt.Errorf("reload %s: %w", p.Name, err)
	}
	return nil
}

// ReloadProcess has the running process take its new config as l says
// (Reloader). It fails when the process is not running, or its placement
// cannot reload it.
func (s *Supervisor) ReloadProcess(ctx context.Context, l launch.Spec) error {
	s.mu.Lock()
	h, st := s.handle, s.state.Status
	s.mu.Unlock()
	if h == nil || (st != Running && st != Standby) { // standby: a floating plugin another host runs
		return fmt.Errorf("it is %s, not running", st)
	}
	r, ok := h.(Reloader)
	if !ok {
		return errors.New("its placement cannot reload it; change the file with onChange: replace")
	}
	return r.Reload(ctx, l)
}
