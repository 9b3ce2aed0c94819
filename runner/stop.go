package runner

import (
	"syscall"
	"time"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// The end of a process: watching for its exit, and the stop that brings
// it about (docs/runner-api.md).

// watch waits for p's end and confirms it.
func (r *Runner) watch(p *process) {
	defer r.wg.Done()
	// Once Close is done stopping, a process whose exit could not be
	// confirmed is given up on; its record stays for the next runner.
	quit, gaveUp := r.quit, (<-chan struct{})(nil)
	for waiting := true; waiting; {
		select {
		case <-p.h.Done():
			waiting = false
		case <-quit:
			quit, gaveUp = nil, p.gaveUp
		case <-gaveUp:
			return
		}
	}
	exit := p.h.Exit()
	if err := r.state.removeRecord(p.name, p.gen); err != nil {
		r.log.Warn("remove a record", "instance", p.name, "generation", p.gen, "err", err)
	}
	r.mu.Lock()
	exit.Requested = p.state.requested()
	exit.Outcome = runtime.Exited
	if p.state.forced() {
		exit.Outcome = runtime.Killed
	}
	p.to(procExited)
	p.exit = exit
	s := p.session
	inst := r.instance(p.name)
	switch {
	case inst.cur == p && inst.old != nil:
		// The new process of a start-first start ended first: the one it
		// started beside is the instance's again.
		inst.cur, inst.old = inst.old, nil
	case inst.cur == p:
		inst.cur = nil
	case inst.old == p:
		inst.old = nil
	}
	inst.remember(p.gen, exit)
	delete(s.procs, p)
	if !s.ended && (!exit.Requested || p.notify) {
		w := wireExit(exit)
		s.send(runnerapi.Event{Type: runnerapi.EventExit, Instance: p.name, Generation: p.gen, Exit: &w})
	}
	close(p.done)
	r.mu.Unlock()
	r.log.Info("exited", "instance", p.name, "generation", p.gen, "pid", p.pid, "session", s.id,
		"outcome", string(exit.Outcome), "requested", exit.Requested, "exit", exit.String())
}

// How a stop goes.
type stopMode int

const (
	// stopRequest is a stop request of the process's session: graceful,
	// answered to the request.
	stopRequest stopMode = iota
	// stopReplace is a start's stop of the process it replaces: graceful,
	// and its exit goes to the process's session's stream.
	stopReplace
	// stopForced skips the graceful part, or cuts one under way short: the
	// lease ran out, the session ended, the runner closes, or a stop
	// request with force (its caller gave up waiting for the graceful part).
	stopForced
)

// stopProcess stops p, or joins the stop under way (a forced stop cuts a
// graceful one short), and reports its exit once confirmed; false when
// its exit could not be confirmed within killWait of SIGKILL. The first
// caller carries the stop out; it does not stop when its caller's request
// goes away.
func (r *Runner) stopProcess(p *process, mode stopMode, shutdown time.Duration) (runtime.Exit, bool) {
	r.mu.Lock()
	if mode == stopReplace {
		p.notify = true
	}
	first := false
	select {
	case <-p.h.Done(): // it exited on its own: nothing to stop
	default:
		if p.state == procRunning {
			p.to(procStopping)
			first = true
		} else if mode == stopForced {
			select {
			case <-p.hurry:
			default:
				close(p.hurry)
			}
		}
	}
	r.mu.Unlock()
	if first {
		r.stopInOrder(p, mode != stopForced, shutdown)
	}
	select {
	case <-p.done:
		return p.exit, true
	default:
	}
	select {
	case <-p.done:
		return p.exit, true
	case <-p.gaveUp:
		return runtime.Exit{}, false
	}
}

// stopInOrder is the runner's stop (docs/runner-api.md), the ladder of
// placement with no exit window and grace for KillAfter: when graceful,
// the stop signal to the family and up to shutdown for it to be gone;
// then the interrupt, SIGTERM to the family, and SIGKILL grace later;
// then up to killWait for the exit. A forced stop joining a graceful one
// cuts its graceful part short. A family member that outlives the
// process itself is stopped as after any exit of its own (local:
// SIGTERM, then SIGKILL after grace).
func (r *Runner) stopInOrder(p *process, graceful bool, shutdown time.Duration) {
	log := r.log.With("instance", p.name, "generation", p.gen, "pid", p.pid, "session", p.session.id)
	send := func(sig syscall.Signal) func() error {
		return func() error {
			if err := p.signal(sig); err != nil {
				log.Warn("signal", "signal", proc.SignalName(sig), "err", err)
			}
			return nil
		}
	}
	if shutdown <= 0 {
		shutdown = defaultShutdown
	}
	l := runtime.Ladder{
		Timing:    runtime.Timing{ShutdownTimeout: shutdown, KillAfter: r.opt.Grace},
		Terminate: send(syscall.SIGTERM),
		Kill:      send(syscall.SIGKILL),
		Gone:      runtime.GoneOn(p.done),
		KillWait:  killWait,
		Hurry:     p.hurry,
		Forcing: func() {
			r.mu.Lock()
			p.to(procInterrupted)
			r.mu.Unlock()
		},
		Killing: func() { log.Info("killing: still running after the interrupt", "grace", r.opt.Grace) },
	}
	if graceful {
		l.Signal = send(p.stopSignal)
		if p.stopMain {
			l.Signal = func() error {
				if err := p.signalMain(p.stopSignal); err != nil {
					log.Warn("signal", "signal", proc.SignalName(p.stopSignal), "err", err)
				}
				return nil
			}
		}
	}
	if outcome, _ := l.Run(); outcome != runtime.Unconfirmed {
		return
	}
	r.mu.Lock()
	p.to(procUnconfirmed)
	r.mu.Unlock()
	log.Error("exit not confirmed: still running after SIGKILL; replacements are refused until it is gone", "waited", killWait)
	close(p.gaveUp)
}
