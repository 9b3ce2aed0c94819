package runner

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/internal/output"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
)

// EnvInvocation is set in every process's environment to an id of that
// start alone, as systemd's INVOCATION_ID: a runner started again finds by
// it what a previous one left running, the processes that left their
// process group included. It is the local placement's, whose records the
// runner keeps in its own state (record) with what it needs to adopt a
// process again.
const EnvInvocation = local.EnvInvocation

// process is one start of an instance: one generation.
type process struct {
	name    string
	gen     int64
	inv     string
	session *session
	// start is the request it was started by, with its reloads' and
	// health requests' changes since (for a handover); r.mu guards it.
	start      runnerapi.Start
	stopSignal syscall.Signal
	stopMain   bool // stopMode: main, the stop signal to the main process alone
	out        *output.Lines
	h          runtime.Handle
	signal     func(syscall.Signal) error // to its family; see local's Signal
	signalMain func(syscall.Signal) error // to its main process alone

	// Set once it runs (Runner.spawned), before its start answers.
	pid       int
	startedAt time.Time

	// Guarded by the runner's mu.
	state  procState
	notify bool // its exit goes to its session's stream even though requested

	healthSet chan struct{} // a change of its health checks (setHealth)

	hurry  chan struct{} // closed by a forced stop joining a graceful one
	gaveUp chan struct{} // closed when a stop gives up on confirming the exit
	done   chan struct{} // closed once its exit is confirmed; then exit is set
	exit   runtime.Exit
}

// signaller is what the runner needs of a local handle beyond
// runtime.Handle: a signal to the whole family.
type signaller interface {
	Signal(syscall.Signal) error
	SignalMain(syscall.Signal) error
}

// startTimer is local's handle too: the start time of its process, read
// before it can be reaped, so never a stranger's that took its pid.
type startTimer interface {
	StartTime() (uint64, error)
}

// defaultShutdown bounds the graceful part of a stop that asks for no
// other (and of a replacement's stop of the process it replaces).
var defaultShutdown = runtime.DefaultTiming().ShutdownTimeout

// start carries out a start request; see docs/runner-api.md.
func (r *Runner) start(ctx context.Context, name string, req *runnerapi.Start) (*runnerapi.Started, error) {
	s, inst, old, err := r.admit(name, req.Session)
	if err != nil {
		return nil, err
	}
	defer r.release(s, inst)

	// An instance without a next generation refuses the start before its
	// process is replaced.
	if err := r.state.canAdvance(name); err != nil {
		return nil, r.noGeneration(name, err)
	}
	if old != nil && req.Overlap {
		r.log.Info("starting beside", "instance", name, "generation", old.gen, "pid", old.pid, "session", req.Session)
	} else if old != nil {
		r.log.Info("replacing", "instance", name, "generation", old.gen, "pid", old.pid, "session", req.Session)
		if _, ok := r.stopProcess(old, stopReplace, defaultShutdown); !ok {
			return nil, unconfirmed("start", name, old.gen)
		}
	}
	// The replaced process took a while to stop: its caller, its session
	// or the runner may be gone meanwhile. Then nothing starts, and no
	// generation is taken.
	if err := r.cutShort(ctx, s); err != nil {
		return nil, err
	}
	p, err := r.newProcess(name, req, s)
	if err != nil {
		return nil, err
	}
	if err := r.spawn(ctx, s, p, req); err != nil {
		return nil, err
	}
	started, err := r.adopt(s, inst, p, req.Plugin)
	if err == nil {
		r.wg.Add(1)
		go r.forwardHealth(p)
	}
	return started, err
}

// admit lets a start of instance name through session id, and marks the
// instance busy (release undoes it): refused while another start or stop
// of it is under way, or while the end of its last process is
// unconfirmed. It returns the process the start replaces, if any.
func (r *Runner) admit(name, id string) (*session, *instance, *process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.liveSession(id)
	if err != nil {
		return nil, nil, nil, err
	}
	inst := r.instance(name)
	switch {
	case inst.busy:
		return nil, nil, nil, kindErr(runnerapi.KindBusy, "start %s: another start or stop of %s is under way", name, name)
	case inst.recovered != nil:
		return nil, nil, nil, unconfirmed("start", name, inst.recovered.Generation)
	case inst.cur != nil && inst.cur.state == procUnconfirmed:
		return nil, nil, nil, unconfirmed("start", name, inst.cur.gen)
	case inst.old != nil:
		return nil, nil, nil, kindErr(runnerapi.KindBusy, "start %s: generation %d, which a start-first start left running, has not stopped yet", name, inst.old.gen)
	}
	inst.busy = true
	r.wg.Add(1) // Close waits for the start: it may be about to spawn
	s.starts.Add(1)
	return s, inst, inst.cur, nil
}

// release ends what admit began.
func (r *Runner) release(s *session, inst *instance) {
	r.mu.Lock()
	inst.busy = false
	r.mu.Unlock()
	s.starts.Done()
	r.wg.Done()
}

// newProcess takes the instance's next generation for a process of req
// and records it, before anything is spawned.
func (r *Runner) newProcess(name string, req *runnerapi.Start, s *session) (*process, error) {
	inv := uuid.NewString()
	gen, err := r.state.next(name, record{Invocation: inv, BootID: r.bootID}, req.Overlap)
	if gen > 0 {
		r.metrics.generations.Inc()
	}
	if err != nil {
		return nil, r.noGeneration(name, err)
	}
	return r.process(name, gen, inv, *req, s), nil
}

// spawn starts p's process through local and waits until it is ready.
// The start stops at once when its caller goes away, its session ends or
// the runner closes: local kills what it started, and nothing of it runs
// when spawn fails.
func (r *Runner) spawn(ctx context.Context, s *session, p *process, req *runnerapi.Start) error {
	id := runtime.Identity{ID: p.name, Generation: p.gen}
	r.mu.Lock()
	r.starting[id] = p
	r.mu.Unlock()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop1 := context.AfterFunc(s.ctx, cancel)
	defer stop1()
	stop2 := context.AfterFunc(r.ctx, cancel)
	defer stop2()
	var h runtime.Handle
	err := r.cutShort(ctx, s)
	if err == nil {
		h, err = r.local.Start(sctx, r.request(p, &id))
	}
	r.mu.Lock()
	delete(r.starting, id)
	if err != nil && s.ended && p.pid != 0 {
		// It ran, and local killed it when the session ended.
		s.late = append(s.late, runnerapi.Stopped{Instance: p.name, Generation: p.gen, Outcome: runnerapi.Killed})
	}
	r.mu.Unlock()
	if err != nil {
		if rerr := r.state.removeRecord(p.name, p.gen); rerr != nil {
			r.log.Warn("remove a record", "instance", p.name, "generation", p.gen, "err", rerr)
		}
		return r.startFailed(p.name, p.gen, s, err)
	}
	r.handle(p, h)
	if p.pid == 0 { // Started was not called: never with local, but be sure
		p.pid, p.startedAt = h.PID(), time.Now()
	}
	return nil
}

// adopt makes the ready process p its instance's and its session's, and
// watches it. If its session ended, or the runner closes, as it got
// ready, it is the instance's until its exit is confirmed, so that no
// replacement starts before, however long that takes; it is stopped at
// once, and the start fails.
func (r *Runner) adopt(s *session, inst *instance, p *process, plugin string) (*runnerapi.Started, error) {
	r.mu.Lock()
	overlap := func() {
		if inst.cur != nil && inst.cur != p && p.start.Overlap {
			inst.old = inst.cur // a start-first start: it runs on until its own stop
		}
		inst.cur = p
	}
	if closed := r.closed; s.ended || closed {
		overlap()
		p.to(procRunning)
		r.wg.Add(1)
		go r.watch(p)
		r.mu.Unlock()
		exit, ok := r.stopProcess(p, stopForced, 0)
		st := runnerapi.Stopped{Instance: p.name, Generation: p.gen, Outcome: runnerapi.Outcome(exit.Outcome)}
		if !ok {
			st.Outcome = runnerapi.Unconfirmed
		}
		r.mu.Lock()
		s.late = append(s.late, st)
		r.mu.Unlock()
		if closed {
			return nil, errClosing
		}
		return nil, noSession(s.id)
	}
	overlap()
	p.to(procRunning)
	s.procs[p] = true
	r.wg.Add(1)
	go r.watch(p)
	r.mu.Unlock()
	r.log.Info("started", "instance", p.name, "generation", p.gen, "pid", p.pid, "session", s.id, "plugin", plugin)
	return &runnerapi.Started{Instance: p.name, Generation: p.gen, PID: p.pid, StartedAt: p.startedAt}, nil
}

// spawned is local's Started hook: a process runs, and its ready check
// has yet to pass. Its record gets its pid and start time now, so a
// runner killed during the ready check leaves it findable by pid too;
// except in the runner's PID namespace, which the kernel kills with the
// runner: there a pid would find nothing, and the invocation id in the
// record's start entry is enough (docs/runner-api.md, "The state dir").
func (r *Runner) spawned(h runtime.Handle) {
	r.mu.Lock()
	p := r.starting[h.Identity()]
	r.mu.Unlock()
	if p == nil {
		return
	}
	r.mu.Lock()
	p.pid, p.startedAt = h.PID(), time.Now()
	r.mu.Unlock()
	if r.local.Isolation().Namespace {
		return
	}
	rec := record{Instance: p.name, Generation: p.gen, Invocation: p.inv, BootID: r.bootID, PID: p.pid, StartedAt: p.startedAt}
	st, ok := h.(startTimer)
	if !ok {
		return // never with local
	}
	start, err := st.StartTime()
	if err != nil {
		// The record without pid stays: the invocation id still finds it.
		r.log.Warn("record the pid of a process", "instance", p.name, "generation", p.gen, "pid", p.pid, "err", err)
		return
	}
	rec.StartTime = start
	// An append to the journal, unsynced (state.recordPID): it holds up
	// the start no more than a write does, and is in the journal before
	// the record's end, which comes after the start.
	if err := r.state.recordPID(rec); err != nil {
		r.log.Warn("record the pid of a process", "instance", p.name, "generation", p.gen, "pid", p.pid, "err", err)
	}
}

// cutShort says why a start must not go on: the runner closes, its
// session ended, or its caller went away; nil when none of these.
func (r *Runner) cutShort(ctx context.Context, s *session) error {
	switch {
	case r.ctx.Err() != nil:
		return errClosing
	case s.ctx.Err() != nil:
		return noSession(s.id)
	case ctx.Err() != nil:
		return kindErr(runnerapi.KindInternal, "start cut short, its caller gone: nothing was started")
	}
	return nil
}

// startFailed turns local's error into the answer to a start.
func (r *Runner) startFailed(name string, gen int64, s *session, err error) error {
	e := *r.startFailure(name, gen, s, err) // a copy: errClosing is shared
	e.body.Generation = gen
	return &e
}

func (r *Runner) startFailure(name string, gen int64, s *session, err error) *kindError {
	var se *runtime.StartError
	var ae *kindError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &se):
		exit := wireExit(se.Exit)
		r.log.Warn("start failed", "instance", name, "generation", gen, "session", s.id, "reason", se.Reason, "exit", se.Exit.String())
		e := kindErr(runnerapi.KindStartFailed, "start %s generation %d: %s", name, gen, se.Reason)
		e.body.Exit = &exit
		return e
	case r.ctx.Err() != nil:
		return errClosing
	case s.ctx.Err() != nil:
		return noSession(s.id)
	case errors.Is(err, context.Canceled):
		return kindErr(runnerapi.KindInternal, "start %s generation %d: cut short, its caller gone: nothing of it runs", name, gen)
	default:
		// It never ran: the command was not found, say.
		r.log.Warn("start failed", "instance", name, "generation", gen, "session", s.id, "err", err)
		e := kindErr(runnerapi.KindStartFailed, "start %s generation %d: %v", name, gen, err)
		e.body.Exit = &runnerapi.Exit{Code: -1, Error: err.Error(), At: time.Now()}
		return e
	}
}
