package runtime

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/spec"
)

// Supervisor keeps one plugin running on a placement: it starts it, marks
// it failed when it exits on its own or fails to start, and starts it
// again on its retry schedule: delay, delay×factor, ... capped at max, each
// with ±20% jitter so that plugins that fail together do not retry
// together; at most attempts times. A run that lasted longer than max
// resets the schedule. Without retry a failed plugin stays failed.
type Supervisor struct {
	placement Placement
	req       Request
	retry     *spec.Retry // the plugin's, or its placement's default

	mu       sync.Mutex
	state    State
	handle   Handle
	lastExit Exit // how the last handle ended
	attempt  int  // restarts since the schedule was last reset
	stopping bool // Stop was called: no more starts
	// change, when set, changes the request of each start (ForStarts).
	change func(*Request)
	// starting is closed when the start under way ends; nil when none is.
	starting    chan struct{}
	cancelStart context.CancelFunc
	timer       *time.Timer
	// deadline, for a one-shot, fires at its once.timeout; expired is
	// set once it did (deadline.go).
	deadline *time.Timer
	expired  bool
	wg       sync.WaitGroup // watchers of handles, and retries armed
	// changed is closed, and replaced, at every change of state, for
	// Await.
	changed chan struct{}
	// started is set once the process of the current run has started
	// (Request.Started, or its start returned): the condition started.
	started bool
	// launched is the process of the start under way once it runs
	// (Request.Started), before the start returns; then it is handle.
	launched Handle
	// term is the end of the term SetTerm set last (zero: none), which
	// each process gets as soon as it runs; termMu orders the terms sent.
	term   time.Time
	termMu sync.Mutex
	// health is the verdict of the current run's liveness check; nil
	// without one (health.go).
	health *health.Tracker
	// unhealthyRow counts the replacements for unhealthiness since a
	// check last passed: past the first, the retry schedule applies.
	unhealthyRow int
	// onChange, when set, is called on each change of state, with mu held.
	onChange func()
}

// OnChange has f called on every change of the plugin's state (a status,
// an error, a restart), so that a host can tell those who watch it
// without asking each plugin again and again. f is called with the
// Supervisor's lock held: it must not call the Supervisor, nor wait.
// Call it before Start.
func (s *Supervisor) OnChange(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = f
}

// NewSupervisor returns a Supervisor of req on p. Nothing starts before
// Start.
func NewSupervisor(p Placement, req Request) *Supervisor {
	retry := req.Plugin.Retry
	if d, ok := p.(Retrier); ok && retry == nil {
		retry = d.DefaultRetry()
	}
	s := &Supervisor{placement: p, req: req, retry: retry, state: State{Status: Stopped, Since: time.Now()}, changed: make(chan struct{})}
	s.req.Started = s.markStarted
	return s
}

// markStarted records that the current run's process started, as a
// placement reports through Request.Started.
func (s *Supervisor) markStarted(h Handle) {
	s.termMu.Lock()
	defer s.termMu.Unlock()
	s.mu.Lock()
	s.started = true
	s.launched = h
	term := s.term
	s.notify()
	s.mu.Unlock()
	if !term.IsZero() {
		setTerm(h, max(time.Until(term), time.Millisecond))
	}
}

// notify wakes every Await, and tells OnChange's f. Called with s.mu held.
func (s *Supervisor) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
	if s.onChange != nil {
		s.onChange()
	}
}

// Start starts the plugin and returns once it runs (and is ready), or
// with the start's error; a failed start is retried on the plugin's
// schedule like a failed run. Cancelling ctx, or a Stop, aborts this start.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return errors.New("start: the plugin is being stopped")
	}
	if s.expired {
		s.mu.Unlock()
		return errors.New("start: the one-shot's once.timeout has passed")
	}
	if s.starting != nil || s.handle != nil && s.state.Status != StopUnconfirmed {
		s.mu.Unlock()
		return errors.New("start: the plugin is already started")
	}
	// A plugin whose end is unconfirmed may start again (a retry): its
	// placement starts nothing beside the old process until it has
	// confirmed the old one's end (a runner refuses until then).
	lost := s.handle
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	s.starting, s.cancelStart = done, cancel
	s.armDeadline()
	s.started = false
	s.health = nil
	s.state.Health, s.state.HealthError = "", ""
	s.set(Starting, "")
	req := s.req // Update may change it meanwhile
	if s.change != nil {
		s.change(&req)
	}
	s.mu.Unlock()

	h, err := s.placement.Start(ctx, req)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.starting, s.cancelStart, s.launched = nil, nil, nil
	return s.settle(ctx, h, err, lost)
}

// Adopt makes h, a run that an earlier host started and this one adopted
// (docs/upgrade.md), the plugin's current run, instead of a Start: it is
// running, watched, health-checked and retried as after a start of its
// own, since when it started. A one-shot's once.timeout counts again from
// now.
func (s *Supervisor) Adopt(h Handle, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armDeadline()
	s.settle(context.Background(), h, nil, nil)
	if !since.IsZero() {
		s.state.Since = since
	}
}

// settle records how a start ended: h running, or err, with lost the
// handle whose end was unconfirmed when it began. It returns the start's
// error, nil for a one-shot that completed before it was ready. Called
// with s.mu held.
func (s *Supervisor) settle(ctx context.Context, h Handle, err error, lost Handle) error {
	switch {
	case err == nil:
		s.handle = h
		s.started = true
		s.state.Identity, s.state.PID = h.Identity(), h.PID()
		s.set(Running, "")
		s.watch(h)
		s.monitor(h)
	case s.req.Plugin.Once.On && completedEarly(err):
		// A one-shot that did its work before its ready check passed.
		s.handle, s.state.PID = nil, 0
		s.complete()
		err = nil
	case s.stopping:
		s.set(Stopping, "")
	case lost != nil && !errors.As(err, new(*StartError)):
		// Nothing new runs, and the old process may still: its end is
		// still to be confirmed, by a stop or by a start that replaces it.
		// (A *StartError means the new process ran, which its placement
		// allows only once the old one's end is confirmed.)
		s.set(StopUnconfirmed, "")
		s.state.LastError = err.Error()
		if ctx.Err() == nil {
			s.scheduleRetry()
		}
	case s.expired:
		// Its deadline aborted the start: the failure is the deadline's.
		s.handle, s.state.PID = nil, 0
		s.set(Failed, s.expiredError())
	default:
		s.handle, s.state.PID = nil, 0
		s.set(Failed, err.Error())
		if ctx.Err() == nil {
			s.scheduleRetry()
		}
	}
	return err
}

// watch waits, on its own goroutine, for h to end. Called with s.mu held.
func (s *Supervisor) watch(h Handle) {
	s.wg.Add(1)
	started := time.Now()
	go func() {
		defer s.wg.Done()
		<-h.Done()
		exit := h.Exit()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.handle == h {
			s.lastExit = exit
		}
		if s.handle != h || s.stopping || exit.Requested {
			return
		}
		if r := s.retry; r != nil && time.Since(started) > r.Max.Std() {
			s.attempt = 0 // it ran long enough to count as healthy
		}
		if exit.Lost {
			// The placement lost track of it (a runner's session was
			// lost): it may still run. The handle is kept, so that a stop
			// asks again, and so is the status until someone confirms.
			s.set(StopUnconfirmed, "")
			s.state.LastError = describeExit(exit)
			s.scheduleRetry()
			return
		}
		s.handle = nil
		s.state.PID = 0
		if s.req.Plugin.Once.On && exit.Success() {
			s.complete() // done: retry is for failures only
			return
		}
		if s.expired {
			// It ended on its own while its deadline stopped it: its
			// failure is the deadline's.
			s.set(Failed, s.expiredError())
			return
		}
		s.set(Failed, describeExit(exit))
		s.scheduleRetry()
	}()
}

// completedEarly reports whether a start failed only because its plugin
// exited 0 before its ready check passed.
func completedEarly(err error) bool {
	var se *StartError
	return errors.As(err, &se) && !se.Exit.At.IsZero() && se.Exit.Success() && !se.Exit.Requested
}

// describeExit is a failure for State.LastError: the exit and the last
// lines of output.
func describeExit(e Exit) string {
	msg := "exited on its own: " + e.String()
	if e.Lost {
		msg = "lost: " + e.String()
	}
	if tail := e.Tail; len(tail) > 0 {
		if len(tail) > 5 {
			tail = tail[len(tail)-5:]
		}
		msg += "; last output: " + strings.Join(tail, " | ")
	}
	return msg
}

// scheduleRetry arms the next restart, if the plugin has a retry schedule
// with attempts left. Called with s.mu held.
func (s *Supervisor) scheduleRetry() {
	r := s.retry
	if r == nil || s.expired || (r.Attempts > 0 && s.attempt >= r.Attempts) {
		s.state.NextRetry = time.Time{}
		return
	}
	s.attempt++
	d := Backoff(r.Delay.Std(), r.Factor, r.Max.Std(), s.attempt, rand.Float64())
	s.state.NextRetry = time.Now().Add(d)
	s.wg.Add(1)
	s.timer = time.AfterFunc(d, func() {
		defer s.wg.Done()
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		s.timer = nil
		s.state.Restarts++
		s.state.NextRetry = time.Time{}
		s.mu.Unlock()
		s.Start(context.Background())
	})
}

// Backoff is the wait before restart number attempt (1 for the first):
// delay × factor^(attempt-1), capped at max, times a jitter between 0.8
// and 1.2 drawn from u in [0, 1), and capped at max again. It saturates:
// however many the attempts (factor^attempt is +Inf past ~1000 of them)
// and however large max (time.Duration(float64(math.MaxInt64)) wraps to
// negative), it is between 0 and max, never NaN, never wrapped.
func Backoff(delay time.Duration, factor float64, max time.Duration, attempt int, u float64) time.Duration {
	if delay <= 0 || max <= 0 {
		return 0
	}
	d := float64(delay) * math.Pow(factor, float64(attempt-1))
	d = math.Min(d, float64(max)) * (0.8 + 0.4*u)
	// float64(max) may round up past max (to 2^63 for math.MaxInt64),
	// where converting back wraps: compare as floats, return max itself.
	if !(d < float64(max)) { // NaN too
		return max
	}
	return time.Duration(math.Max(d, 0))
}

// Stop stops the plugin, as Handle.Stop does, and cancels any retry; a
// start under way is aborted. A plugin that is not running (failed, or
// never started) stops at once. Cancelling ctx forces the plugin, as for
// Handle.Stop. After Stop the Supervisor starts nothing more. A stop that
// ends RemoteTerminationUnconfirmed keeps the handle, with status
// StopUnconfirmed, so that a later Stop asks again.
func (s *Supervisor) Stop(ctx context.Context) (Outcome, error) {
	s.mu.Lock()
	s.stopping = true
	s.disarmDeadline()
	s.abortPending()
	h := s.handle
	s.handle = nil
	if h != nil {
		s.set(Stopping, "")
	}
	s.mu.Unlock()

	outcome, err := Exited, error(nil)
	if h != nil {
		outcome, err = h.Stop(ctx)
	}
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if outcome == Unconfirmed {
		s.handle = h
		s.set(StopUnconfirmed, "")
		if err != nil {
			s.state.LastError = err.Error()
		}
		return outcome, err
	}
	if h != nil {
		s.lastExit = h.Exit()
	}
	s.state.PID = 0
	s.set(Stopped, "")
	return outcome, err
}

// ForStarts has change change the request of every start from now on,
// until ForStarts(nil): what a replacement asks of its new process while
// it is not yet the plugin's (a shorter ready wait, a start beside the
// old one), its restarts meanwhile included, and not once it is.
func (s *Supervisor) ForStarts(change func(*Request)) {
	s.mu.Lock()
	s.change = change
	s.mu.Unlock()
}

// BoundReady bounds r's ready wait to d, when its ready timeout is
// longer.
func (r *Request) BoundReady(d time.Duration) {
	if rd := r.Launch.Ready; rd != nil && (rd.Timeout == 0 || time.Duration(rd.Timeout) > d) {
		bounded := *rd
		bounded.Timeout = launch.Duration(d)
		r.Launch.Ready = &bounded
	}
}

// abortPending cancels an armed retry and aborts a start under way,
// waiting for it to end. Called with s.mu held, which it lets go while
// it waits.
func (s *Supervisor) abortPending() {
	if s.timer != nil && s.timer.Stop() {
		s.wg.Done() // the armed retry will not run
	}
	s.timer = nil
	for s.starting != nil {
		starting := s.starting
		s.cancelStart()
		s.mu.Unlock()
		<-starting
		s.mu.Lock()
	}
}

// State returns a snapshot of the plugin's state: a Reporter's own while
// it runs, with the restarts of both.
func (s *Supervisor) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.handle.(Reporter); ok && s.state.Status == Running {
		st := r.State()
		st.Restarts += s.state.Restarts
		return st
	}
	return s.state
}

// LastExit is how the plugin last ended: its last exit on its own, or
// its last stop's; zero before either.
func (s *Supervisor) LastExit() Exit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastExit
}

// set moves to status; a failure records its error. Called with s.mu held.
func (s *Supervisor) set(status Status, lastError string) {
	if s.state.Status != status {
		s.state.Since = time.Now()
	}
	s.state.Status = status
	if status == Failed {
		s.state.LastError = lastError
	}
	s.notify()
}
