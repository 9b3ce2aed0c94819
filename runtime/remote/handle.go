package remote

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// A handle is one process on the runner, and its stop: the request to the
// runner and the wait for its confirmation (docs/stopping.md, "Lost
// sessions").

// waitConfirm bounds the wait for a stop's confirmation: the graceful
// stop, then the lease plus margin.
func waitConfirm(cfg Config, lease time.Duration) time.Duration {
	return cfg.ShutdownTimeout + lease + cfg.Margin
}

// handle is one process on the runner: one generation of an instance.
type handle struct {
	r        *Remote
	s        *session // the session that started it
	req      runtime.Request
	instance string
	gen      int64
	pid      int
	tail     *tail

	done chan struct{}
	mu   sync.Mutex
	exit runtime.Exit // set once done is closed; a later stop may confirm it

	stopMu sync.Mutex // one stop request at a time
	// health carries the results of the health checks the runner runs
	// (HealthResults); a result the Supervisor is too slow for is dropped.
	health chan health.Result
}

// HealthResults are the results of the plugin's health checks, run on
// the runner and sent through the session's events
// (runtime.HealthSource).
func (h *handle) HealthResults() <-chan health.Result { return h.health }

// checked passes on a health event's result, never blocking the
// session's events.
func (h *handle) checked(r runnerapi.HealthResult) {
	res := health.Result{At: r.At}
	if !r.OK {
		res.Err = errors.New(r.Error)
	}
	select {
	case h.health <- res:
	default:
	}
}

func (h *handle) Identity() runtime.Identity {
	return runtime.Identity{ID: h.instance, Generation: h.gen}
}
func (h *handle) PID() int              { return h.pid }
func (h *handle) Done() <-chan struct{} { return h.done }

// Exit is how the process ended. After a lost session or an unconfirmed
// stop, a later stop that the runner confirms replaces it.
func (h *handle) Exit() runtime.Exit {
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.exit
}

// output writes a line of the process's output to its log.
func (h *handle) output(line string) {
	h.tail.add(line)
	if out := h.req.Output; out != nil {
		out.Write([]byte(line + "\n"))
	}
}

// finish records how the process ended. The first end closes done; a
// later one counts only if it confirms an end that was not confirmed.
func (h *handle) finish(e runtime.Exit) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	if len(e.Tail) == 0 {
		e.Tail = h.tail.lines()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
		if !confirmedExit(h.exit) && confirmedExit(e) {
			h.exit = e
		}
	default:
		h.exit = e
		close(h.done)
	}
}

func confirmedExit(e runtime.Exit) bool { return !e.Lost && e.Outcome != runtime.Unconfirmed }

// confirmed reports whether the runner confirmed the process's end.
func (h *handle) confirmed() bool {
	select {
	case <-h.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return confirmedExit(h.exit)
	default:
		return false
	}
}

// Stop asks the runner to stop the process (its graceful stop bounded by
// the shutdown timeout, then interrupt, then kill after grace) and waits
// at most the shutdown timeout plus lease plus margin for the runner to
// confirm. Without a confirmation the outcome is
// RemoteTerminationUnconfirmed: it may still be running. A process whose
// session was lost is stopped through a new session. Stopping again after
// an unconfirmed stop asks the runner again.
//
// Cancelling ctx (or its deadline) cuts the graceful part short: a ctx
// already ended asks for a forced stop, and one that ends while the stop
// is under way forces it then. Nothing shortens the wait for the
// confirmation: only the runner can make sure the process is gone, and it
// answers when it has. A process that had to be
// interrupted or killed is Killed, with a *runtime.RemoteForced among the
// CleanupError's causes.
func (h *handle) Stop(ctx context.Context) (runtime.Outcome, error) {
	h.stopMu.Lock()
	defer h.stopMu.Unlock()
	if h.confirmed() {
		return h.exit.Outcome, nil
	}
	r := h.r
	op := fmt.Sprintf("stop %s generation %d", h.instance, h.gen)
	shutdown := r.cfg.ShutdownTimeout
	if d, ok := ctx.Deadline(); ok {
		shutdown = max(min(shutdown, time.Until(d)), time.Millisecond)
	}
	res, waited, err := h.askStop(ctx, op, shutdown)
	if err != nil {
		cause := &runtime.RemoteTerminationUnconfirmed{Plugin: h.req.Name, Instance: h.instance, Generation: h.gen, Runner: r.cfg.Name, Cause: err}
		r.log.Warn("Remote execution unconfirmed", "plugin", h.req.Name, "remote.instance", h.instance,
			"remote.generation", h.gen, "bound", waited, "err", err)
		h.finish(runtime.Exit{Code: -1, Error: cause.Error(), Requested: true, Outcome: runtime.Unconfirmed})
		return runtime.Unconfirmed, &runtime.CleanupError{Plugin: h.req.Name, Outcome: runtime.Unconfirmed, Causes: multierror.Append(nil, cause)}
	}
	if h.confirmed() {
		return h.Exit().Outcome, nil // it exited on its own meanwhile
	}
	r.log.Info("Remote execution terminated", "plugin", h.req.Name,
		"remote.termination", string(res.Outcome), "remote.instance", h.instance, "remote.generation", h.gen)
	exit, outcome := exitOf(res.Exit), runtime.Outcome(res.Outcome)
	exit.Requested, exit.Outcome = true, outcome
	h.finish(exit)
	h.s.untrack(h)
	if outcome == runtime.Killed {
		return outcome, &runtime.CleanupError{Plugin: h.req.Name, Outcome: runtime.Killed,
			Causes: multierror.Append(nil, &runtime.RemoteForced{Plugin: h.req.Name, Instance: h.instance, Generation: h.gen, Runner: r.cfg.Name,
				Killed: exit.Signal == "SIGKILL"})}
	}
	return outcome, nil
}

// askStop sends the stop through the live session (a new one if the
// process's was lost) and waits for the answer, or for the bound, which
// it returns. The stop is forced if ctx has ended, and forced once it ends
// while the runner is carrying out the graceful part.
func (h *handle) askStop(ctx context.Context, op string, shutdown time.Duration) (runnerapi.StopResult, time.Duration, error) {
	r := h.r
	var res runnerapi.StopResult
	// The bound starts now: opening a session, when the last was lost,
	// is part of it.
	r.mu.Lock()
	cfg, lease := r.cfg, r.cfg.Lease
	if s := r.sess; s != nil && s.ctx.Err() == nil {
		cfg, lease = s.cfg, s.lease
	} else if lease <= 0 {
		lease = runnerapi.DefaultLease
	}
	r.mu.Unlock()
	wait := waitConfirm(cfg, lease)
	bctx, cancel := context.WithTimeoutCause(context.Background(), wait,
		fmt.Errorf("no confirmation within %s (shutdown timeout + lease + margin)", wait))
	defer cancel()
	s, err := r.session(bctx)
	if err != nil {
		return res, wait, err
	}
	cctx, cancelCall := context.WithCancelCause(bctx)
	defer cancelCall(nil)
	stop := context.AfterFunc(s.ctx, func() { cancelCall(context.Cause(s.ctx)) })
	defer stop()
	path := "/v1/instances/" + url.PathEscape(h.instance) + "/stop"
	body := runnerapi.Stop{Session: s.id, Generation: h.gen, ShutdownTimeoutMillis: max(shutdown.Milliseconds(), 1), Force: ctx.Err() != nil}
	if body.Force {
		err = s.c.call(cctx, op, "POST", path, body, &res)
		return res, wait, err
	}
	hurried := make(chan struct{})
	stopHurry := context.AfterFunc(ctx, func() {
		// The caller stopped waiting for the graceful part: force it. The
		// runner answers this one as it answers the stop under way.
		defer close(hurried)
		force := runnerapi.Stop{Session: s.id, Generation: h.gen, Force: true}
		if err := s.c.call(cctx, op+" (forced)", "POST", path, force, nil); err != nil && cctx.Err() == nil {
			r.log.Warn("force a stop", "remote.instance", h.instance, "remote.generation", h.gen, "err", err)
		}
	})
	err = s.c.call(cctx, op, "POST", path, body, &res)
	if !stopHurry() {
		cancelCall(nil)
		<-hurried
	}
	return res, wait, err
}
