package ready

import (
	"context"
	"errors"
	"time"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/launch"
)

// The loop of a liveness check (docs/semantics.md, "Health checks"),
// with the probes of the ready checks.

// Health checks hc every interval, once startPeriod has passed, until ctx
// ends, and reports each result. One check runs at a time: the next
// begins an interval after this one began, or at once when this one took
// longer, so a check never runs in parallel with itself. exec runs an
// exec check as the plugin runs; nil refuses one.
func Health(ctx context.Context, hc *launch.Health, exec Exec, report func(health.Result)) {
	if exec == nil {
		exec = func(context.Context, []string) error {
			return errors.New("exec checks cannot run for this placement")
		}
	}
	if !sleep(ctx, hc.StartPeriod.Std()) {
		return
	}
	for {
		began := time.Now()
		cctx, cancel := context.WithTimeout(ctx, hc.Timeout.Std())
		err := Probe(cctx, hc.Probe, exec)
		if err != nil && ctx.Err() == nil && (cctx.Err() != nil || timedOut(err)) {
			err = &TimeoutError{Timeout: hc.Timeout.Std(), Last: err}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		report(health.Result{Err: err, At: time.Now()})
		if !sleep(ctx, hc.Interval.Std()-time.Since(began)) {
			return
		}
	}
}

// TimeoutError is a check that did not answer within its timeout.
type TimeoutError struct {
	Timeout time.Duration
	Last    error
}

func (e *TimeoutError) Error() string {
	return "no answer within " + launch.Duration(e.Timeout).String() + ": " + e.Last.Error()
}

func (e *TimeoutError) Unwrap() error { return e.Last }

// timedOut reports whether err is a timeout: a dial or request that the
// check's deadline ended, sometimes reported just before ctx's own end.
func timedOut(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// HealthChecks runs hc's checks (Health)
// from now until gone or stop is closed (a nil stop: never), and delivers
// each result on the channel it returns, which it closes when it stops.
// A result waits until it is taken, or gone: so no check begins before
// the last one's result is taken, and none is lost. Without hc it
// returns nil.
func HealthChecks(hc *launch.Health, exec Exec, gone, stop <-chan struct{}) <-chan health.Result {
	if hc == nil {
		return nil
	}
	out := make(chan health.Result)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(out)
		defer cancel()
		go func() {
			select {
			case <-gone:
				cancel()
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		Health(ctx, hc, exec, func(r health.Result) {
			select {
			case out <- r:
			case <-ctx.Done():
			}
		})
	}()
	return out
}
