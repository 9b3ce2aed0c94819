package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/runtime"
)

// module is the runtime.Handle of one instance of a module, running on its
// own goroutine from instantiation until _start returns, traps, or the
// module is closed.
type module struct {
	name   string
	id     runtime.Identity
	timing runtime.Timing
	out    runtime.Output
	eof    *os.File // stdin's write end: closing it is the graceful stop
	kill   context.CancelFunc

	stop      chan struct{} // closed by the first Stop
	stopOnce  sync.Once
	hurry     chan struct{}
	hurryOnce sync.Once
	returned  chan struct{} // closed when the module's goroutine returns

	done    chan struct{} // closed once the end is confirmed; then:
	exit    runtime.Exit
	outcome runtime.Outcome
	err     error

	// health carries the results of its health checks (tcp or http),
	// from its start (once ready) on; nil without.
	health <-chan health.Result
}

var _ runtime.HealthSource = (*module)(nil)

// HealthResults are the results of the worker's health checks, run in
// the host from its start (once ready) until it is gone.
func (m *module) HealthResults() <-chan health.Result { return m.health }

func newModule(name string, id runtime.Identity, timing runtime.Timing, out runtime.Output, eof *os.File, kill context.CancelFunc) *module {
	return &module{
		name: name, id: id, timing: timing, out: out, eof: eof, kill: kill,
		stop:     make(chan struct{}),
		hurry:    make(chan struct{}),
		returned: make(chan struct{}),
		done:     make(chan struct{}),
	}
}

func (m *module) Identity() runtime.Identity { return m.id }
func (m *module) PID() int                   { return 0 }
func (m *module) Done() <-chan struct{}      { return m.done }
func (m *module) Exit() runtime.Exit         { <-m.done; return m.exit }

// run owns the module: it instantiates it on a goroutine of its own,
// which runs its _start, then waits for that to return or for a stop, and
// records how it ended. Whatever the module does (trap, exit, run out of
// memory) ends on that goroutine: nothing of it reaches the host.
//
// release is called on that goroutine once it has returned from the
// module, and only then: the module's code is no longer needed.
func (m *module) run(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule, cfg wazero.ModuleConfig, stdin *os.File, gone func(*module), release func()) {
	var err error
	go func() {
		defer close(m.returned)
		var mod api.Module
		mod, err = rt.InstantiateModule(ctx, compiled, cfg)
		if mod != nil {
			mod.Close(context.Background())
		}
		stdin.Close()
		release()
	}()
	requested := false
	select {
	case <-m.returned:
		m.outcome = runtime.Exited
	case <-m.stop:
		requested = true
		m.outcome, m.err = m.stopInOrder()
	}
	m.eof.Close()
	m.kill()
	select {
	case <-m.returned:
		m.exit = exitOf(err)
	default:
		// Closed, yet still in a host call that no close ends (stopInOrder
		// waited killWait for it): it runs none of its code again, and its
		// goroutine returns when the call does.
		m.exit = runtime.Exit{Code: -1, Error: "terminated"}
	}
	m.exit.Requested, m.exit.Outcome, m.exit.Tail, m.exit.At = requested, m.outcome, m.out.Tail(), time.Now()
	gone(m)
	close(m.done)
}

// exitOf reads how a module ended from InstantiateModule's error.
func exitOf(err error) runtime.Exit {
	var exit *sys.ExitError
	switch {
	case err == nil:
		return runtime.Exit{Code: 0}
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled:
		return runtime.Exit{Code: -1, Error: "terminated"}
	case errors.As(err, &exit):
		return runtime.Exit{Code: int(exit.ExitCode())}
	}
	return runtime.Exit{Code: -1, Error: err.Error()} // a trap, or a failed instantiation
}

// Stop stops the module in graft's order for workers (docs/stopping.md,
// "The stop sequence"): stdin closed (the graceful stop) and up to
// ShutdownTimeout for it to return, then ExitWindow more, then the module
// closed; then wait until its goroutine has returned. See runtime.Handle.
//
// A stop whose module was still in a host call after killWait ends
// Unconfirmed; a Stop after that call returned ends Killed.
func (m *module) Stop(ctx context.Context) (runtime.Outcome, error) {
	m.stopOnce.Do(func() { close(m.stop) })
	select {
	case <-m.done:
	case <-ctx.Done():
		m.hurryOnce.Do(func() { close(m.hurry) })
		<-m.done
	}
	if m.outcome == runtime.Unconfirmed {
		select {
		case <-m.returned:
			var ce *runtime.CleanupError
			errors.As(m.err, &ce)
			return runtime.Killed, &runtime.CleanupError{Plugin: m.name, Outcome: runtime.Killed, Causes: ce.Causes}
		default:
		}
	}
	return m.outcome, m.err
}

// killWait bounds the wait for the module's goroutine after the module is
// closed. Every host call a module can block in ends when it is closed
// (its sleeps, see nanosleep) or when its stdin ends (the first step of
// every stop), and no pipe or device opens under a mount (regularOnly),
// so only a read that the host's kernel does not end (a hung network
// mount) waits it out; the stop then ends Unconfirmed. A variable, so a
// test can shorten it.
var killWait = 10 * time.Second

func (m *module) stopInOrder() (runtime.Outcome, error) {
	outcome, causes := runtime.Ladder{
		Timing:       m.timing,
		Signal:       func() error { m.eof.Close(); return nil },
		Kill:         func() error { m.kill(); return nil },
		Gone:         runtime.GoneOn(m.returned),
		KillWait:     killWait,
		Hurry:        m.hurry,
		HurryKills:   true,
		CutShort:     runtime.ErrCutShort,
		Missed:       &runtime.LocalTerminationTimeout{Plugin: m.name, Instance: m.id.ID, Window: m.timing.ExitWindow},
		StillRunning: fmt.Errorf("still in a host call %s after it was closed: it runs none of its code again", killWait),
	}.Run()
	if outcome == runtime.Exited {
		return outcome, nil
	}
	// Unconfirmed while its goroutine is still in a host call (a read of
	// a hung network mount): it runs none of its code again, but the
	// call may still take bytes from a file, so it is not said stopped
	// until the call returns (Stop asks again).
	return outcome, &runtime.CleanupError{Plugin: m.name, Outcome: outcome, Causes: causes}
}

// wait returns once the module runs and, if the plugin has a ready check,
// is ready; a module that ends first, or is not ready in time, is a
// *runtime.StartError and nothing of it is left.
func wait(ctx context.Context, m *module, req runtime.Request, seen <-chan struct{}) error {
	r := req.Launch.Ready
	if r == nil {
		if ctx.Err() != nil {
			m.Stop(runtime.Forced)
			return ctx.Err()
		}
		return nil
	}
	noExec := func(context.Context, []string) error {
		return errors.New("a worker has no process to run a ready command beside")
	}
	err := ready.Wait(ctx, r, noExec, m.returned, seen)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ready.ErrGone):
		<-m.done
		return &runtime.StartError{Plugin: m.name, Reason: err.Error(), Exit: m.exit}
	case ctx.Err() != nil:
		m.Stop(runtime.Forced)
		return ctx.Err()
	}
	m.Stop(context.Background())
	return &runtime.StartError{Plugin: m.name, Reason: err.Error(), Exit: m.exit}
}
