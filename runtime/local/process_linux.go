package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
)

// process is the runtime.Handle of one local process. One goroutine, run,
// owns the process from its start to its reaping: it notices an exit of
// its own, carries out a requested stop, and reaps. Stop only asks it and
// waits for it.
type process struct {
	name   string
	id     runtime.Identity
	signal atomic.Int32 // the graceful stop's signal; SetStopSignal changes it
	main   atomic.Bool  // the graceful stop's signal to the main process alone (stopMode: main)
	p      *proc.Process
	out    runtime.Output
	timing runtime.Timing
	// probe runs a check's command as the plugin runs (Local.probe).
	probe func(ctx context.Context, argv []string) error
	// health carries the results of its health checks, from its start
	// (once ready) on, or from SetHealth; nil without. healthStop ends
	// the checks that feed it.
	healthMu   sync.Mutex
	health     <-chan health.Result
	healthStop chan struct{}

	stop      chan struct{} // closed by the first Stop
	stopOnce  sync.Once
	hurry     chan struct{} // closed by a Stop whose ctx ends
	hurryOnce sync.Once
	copied    chan struct{} // closed when the output pipe is drained
	pipe      *os.File      // its read end
	gate      *sync.RWMutex // the Local's: see Local.Freeze

	reapMu sync.Mutex // held while reaping, so Signal never outlives the pid
	reaped bool

	done    chan struct{} // closed once reaped; then the fields below are set
	exit    runtime.Exit
	outcome runtime.Outcome
	err     error
}

var (
	_ runtime.Prober       = (*process)(nil)
	_ runtime.HealthSetter = (*process)(nil)
)

// HealthResults are the results of the plugin's health checks, run on
// this machine from its start (once ready), or from the last SetHealth,
// until it is gone.
func (p *process) HealthResults() <-chan health.Result {
	p.healthMu.Lock()
	defer p.healthMu.Unlock()
	return p.health
}

// SetHealth ends the plugin's health checks, and runs hc's from now on
// (none when nil), the process running on: a change of health in place.
// HealthResults then gives theirs; the old channel closes.
func (p *process) SetHealth(_ context.Context, hc *launch.Health) error {
	p.healthMu.Lock()
	defer p.healthMu.Unlock()
	if p.healthStop != nil {
		close(p.healthStop)
	}
	p.healthStop = make(chan struct{})
	p.health = ready.HealthChecks(hc, p.probe, p.done, p.healthStop)
	return nil
}

// Probe runs an exec check of the plugin (a health check's) in its
// directory and environment, killed with its group when ctx ends.
func (p *process) Probe(ctx context.Context, argv []string) error { return p.probe(ctx, argv) }

// newProcess watches pp; gone is called once it is reaped, before Done
// closes.
func newProcess(req runtime.Request, id runtime.Identity, pp *proc.Process, pipe *os.File, timing runtime.Timing, gone func(*process), gate *sync.RWMutex) *process {
	p := &process{
		pipe:   pipe,
		gate:   gate,
		name:   req.Name,
		id:     id,
		p:      pp,
		out:    req.Output,
		timing: timing,
		stop:   make(chan struct{}),
		hurry:  make(chan struct{}),
		copied: make(chan struct{}),
		done:   make(chan struct{}),
	}
	p.signal.Store(int32(proc.SignalNamed(req.Launch.StopSignal)))
	p.SetStopMode(req.Launch.StopMode)
	go p.copy(pipe)
	go p.run(pipe, gone)
	return p
}

func (p *process) Identity() runtime.Identity { return p.id }
func (p *process) PID() int                   { return p.p.Pid }
func (p *process) Done() <-chan struct{}      { return p.done }
func (p *process) Exit() runtime.Exit         { <-p.done; return p.exit }

// Stop asks run to stop the process and waits until it is reaped. See
// runtime.Handle.
func (p *process) Stop(ctx context.Context) (runtime.Outcome, error) {
	p.stopOnce.Do(func() { close(p.stop) })
	select {
	case <-p.done:
	case <-ctx.Done():
		p.hurryOnce.Do(func() { close(p.hurry) })
		<-p.done
	}
	return p.outcome, p.err
}

// copy moves the process's output to p.out until every writer of the pipe
// is gone or the pipe is closed. It drains the pipe even when p.out fails
// (a full disk): a plugin must never block on a full pipe because its log
// cannot be written. Each read and its write are made under the gate,
// shared: a Freeze, which sets the pipe's read deadline, waits for the
// write of what was read, and the next read waits for the thaw.
func (p *process) copy(pipe *os.File) {
	defer close(p.copied)
	rc, err := pipe.SyscallConn()
	if err != nil {
		return
	}
	for {
		p.gate.RLock()
		if !p.copyOnce(rc) {
			p.gate.RUnlock()
			return
		}
		p.gate.RUnlock()
	}
}

// copyOnce reads what the pipe has, once it has something, and writes it
// to p.out. It reports false at the pipe's end, or when it is closed.
func (p *process) copyOnce(rc syscall.RawConn) bool {
	// The buffer is taken only once the pipe has something: a
	// plugin that writes nothing holds none while it waits.
	var buf *[]byte
	var n int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		buf = readBufs.Get().(*[]byte)
		for n, rerr = syscall.Read(int(fd), *buf); rerr == syscall.EINTR; n, rerr = syscall.Read(int(fd), *buf) {
		}
		if rerr == syscall.EAGAIN {
			readBufs.Put(buf)
			buf = nil
			return false
		}
		return true
	})
	if n > 0 {
		p.out.Write((*buf)[:n])
	}
	if buf != nil {
		readBufs.Put(buf)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true // frozen: the next read waits at the gate
	}
	return err == nil && rerr == nil && n > 0 // else closed, failed, or at its end
}

// readBufs are the buffers of the output pipes' reads, shared.
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, 8<<10)
	return &b
}}

// drainWait bounds the wait for the output pipe's end after the family is
// gone: a writer graft could not see (one that shed the family's marker)
// must not hold the stop.
const drainWait = 200 * time.Millisecond

func (p *process) run(pipe *os.File, gone func(*process)) {
	var requested bool
	select {
	case <-p.p.Exited():
		p.outcome = runtime.Exited
		p.cleanLeftovers()
	case <-p.stop:
		requested = true
		p.outcome, p.err = p.stopInOrder()
	}
	<-p.p.Exited() // not under reapMu: a process stuck in the kernel may never exit
	p.gate.RLock() // a frozen Local reaps nothing: the next host will
	p.reapMu.Lock()
	st, err := p.p.Reap()
	p.reaped = true
	p.reapMu.Unlock()
	p.gate.RUnlock()
	if err != nil {
		p.err = errors.Join(p.err, err)
	}
	select {
	case <-p.copied:
	case <-time.After(drainWait):
	}
	pipe.Close() // ends copy if a writer graft could not see still holds the pipe
	<-p.copied
	p.exit = runtime.Exit{
		Code:      st.Code,
		Requested: requested,
		Outcome:   p.outcome,
		Tail:      p.out.Tail(),
		At:        time.Now(),
	}
	if st.Signal != 0 {
		p.exit.Signal = proc.SignalName(st.Signal)
	}
	gone(p)
	close(p.done)
}

// stopInOrder is the stop of a local process (docs/stopping.md): the
// stop signal to its family, up to ShutdownTimeout for it to be gone;
// then ExitWindow more; then SIGTERM to the family and, KillAfter later,
// SIGKILL; then wait until it is gone. Missing the exit window is a
// LocalTerminationTimeout, even when the termination then works. A
// hurried stop kills at once.
func (p *process) stopInOrder() (runtime.Outcome, error) {
	outcome, causes := runtime.Ladder{
		Timing:     p.timing,
		Signal:     p.gracefulSignal,
		Terminate:  func() error { return p.signalFamily(syscall.SIGTERM) },
		Kill:       func() error { return p.signalFamily(syscall.SIGKILL) },
		Gone:       p.goneWithin,
		KillWait:   killWait,
		Hurry:      p.hurry,
		HurryKills: true,
		CutShort:   runtime.ErrCutShort,
		Missed:     &runtime.LocalTerminationTimeout{Plugin: p.name, Instance: p.id.ID, Window: p.timing.ExitWindow},
	}.Run()
	if outcome == runtime.Unconfirmed {
		outcome = runtime.Killed // run waits for the exit all the same
	}
	return outcome, p.cleanupError(outcome, causes)
}

// gracefulSignal sends the stop signal, to the family or, with stopMode:
// main, to the main process alone: the forced steps that may follow reach
// the whole family.
func (p *process) gracefulSignal() error {
	sig := syscall.Signal(p.signal.Load())
	if p.main.Load() {
		return p.SignalMain(sig)
	}
	return p.signalFamily(sig)
}

func (p *process) cleanupError(o runtime.Outcome, causes *multierror.Error) error {
	if causes.ErrorOrNil() == nil {
		return nil
	}
	return &runtime.CleanupError{Plugin: p.name, Outcome: o, Causes: causes}
}

// cleanLeftovers deals with a process that exited on its own: whatever it
// left running gets the ladder forced from the start (runtime.Ladder):
// SIGTERM, then SIGKILL after the exit window, so a failed plugin leaves
// no orphan behind.
func (p *process) cleanLeftovers() {
	if p.goneWithin(0, nil) {
		return
	}
	runtime.Ladder{
		Timing:    runtime.Timing{KillAfter: p.timing.ExitWindow},
		Terminate: func() error { return p.signalFamily(syscall.SIGTERM) },
		Kill:      func() error { return p.signalFamily(syscall.SIGKILL) },
		Gone:      p.goneWithin,
		KillWait:  killWait,
	}.Run()
}

// Signal sends sig to the process's family as its stop does: to its
// process group and to every member that left it. It lets another stop
// order than Stop's be built on the handle (the runner's: interrupt, then
// kill after its grace); a process that exits from such a signal ends as
// one that exited on its own, and what it leaves running is stopped as
// after any exit of its own. Once the process is reaped it does nothing:
// its pid may name another process by then.
func (p *process) Signal(sig syscall.Signal) error {
	p.reapMu.Lock()
	defer p.reapMu.Unlock()
	if p.reaped {
		return nil
	}
	return p.signalFamily(sig)
}

// SignalMain sends sig to the main process alone: a program such as
// nginx reloads in its master, which tells its workers, and a stop with
// stopMode: main goes to it alone. Once the process is reaped it fails.
func (p *process) SignalMain(sig syscall.Signal) error {
	p.reapMu.Lock()
	defer p.reapMu.Unlock()
	if p.reaped {
		return errors.New("it has exited")
	}
	return p.p.Signal(sig)
}

// SetTerm has the init of the namespace stop the process in d unless
// SetTerm comes again first (runtime.TermSetter); once reaped it does
// nothing.
func (p *process) SetTerm(d time.Duration) error {
	p.reapMu.Lock()
	defer p.reapMu.Unlock()
	if p.reaped {
		return nil
	}
	return p.p.SetTerm(d)
}

// SetStopSignal makes sig the signal of the graceful stop
// (runtime.StopSignalSetter).
func (p *process) SetStopSignal(sig string) { p.signal.Store(int32(proc.SignalNamed(sig))) }

// SetStopMode makes mode who gets the graceful stop's signal
// (runtime.StopSignalSetter).
func (p *process) SetStopMode(mode string) { p.main.Store(mode == launch.StopMain) }

// StartTime is the process's start time in clock ticks after boot (as
// proc.StartTime reads it), read under the reaping lock: its pid cannot
// name another process yet.
func (p *process) StartTime() (uint64, error) {
	p.reapMu.Lock()
	defer p.reapMu.Unlock()
	if p.reaped {
		return 0, errors.New("its process has been reaped")
	}
	return proc.StartTime(p.p.Pid)
}

// signalFamily sends sig to the process group and, one by one, to the
// family members that left it (found through /proc).
func (p *process) signalFamily(sig syscall.Signal) error {
	var errs []error
	errs = append(errs, p.p.SignalGroup(sig))
	members, err := p.p.Family()
	errs = append(errs, err)
	for _, m := range members {
		if m.Pgid != p.p.Pid {
			errs = append(errs, m.Signal(sig))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("send %s: %w", proc.SignalName(sig), err)
	}
	return nil
}

// goneWithin waits until the process and its whole family are gone, and
// reports true, or until timeout passes or hurry is closed (nil: never),
// and reports false. The process leaves a zombie, which is gone enough.
func (p *process) goneWithin(timeout time.Duration, hurry <-chan struct{}) bool {
	timer := time.NewTimer(max(timeout, 0))
	defer timer.Stop()
	stop := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		select {
		case <-timer.C:
		case <-hurry:
		case <-quit:
		}
		close(stop)
	}()
	defer func() { close(quit); <-stop }()
	for {
		select {
		case <-p.p.Exited(): // first, so an exit already seen wins over a deadline
		default:
			select {
			case <-p.p.Exited():
			case <-stop:
				return false
			}
		}
		members, err := p.p.Family()
		if err != nil || len(members) == 0 {
			return err == nil
		}
		if !proc.WaitMembers(members, stop) {
			return false
		}
		// They have gone; look again in case they forked on the way.
	}
}

func describeStatus(st proc.Status) string {
	if st.Signal != 0 {
		return "signal: " + proc.SignalName(st.Signal)
	}
	return fmt.Sprintf("exit status %d", st.Code)
}

func trimOutput(b []byte) string {
	return strings.TrimSpace(string(b))
}
