// Package apply carries out a plan's step graph: each step as soon as the
// steps it waits on have succeeded, at most Parallelism at a time,
// reporting progress as it goes and every error at the end.
package apply

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/internal/errkind"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// Executor does the steps: it stops and starts plugins.
type Executor interface {
	// Stop stops plugin and forgets it. It is called with a context that
	// the apply's cancellation does not reach: a step, once begun, is
	// finished.
	Stop(ctx context.Context, plugin string) (Result, error)
	// Start starts plugin as the desired spec says, and returns once it
	// has reached until: ready when until is empty or ready, but a
	// one-shot completed (its exit, non-zero, fails the step). On the
	// way it calls reached with each condition the plugin reaches
	// (started, ready, healthy, completed), so that the steps waiting on
	// one begin then (docs/semantics.md, "Dependency conditions"). The
	// same holds of its context.
	Start(ctx context.Context, plugin string, until spec.Condition, reached func(spec.Condition)) (Result, error)
}

// Result is what a step did.
type Result struct {
	// Outcome is how a stop ended.
	Outcome runtime.Outcome `json:"outcome,omitempty"`
	// Identity is what a start's plugin sees.
	Identity runtime.Identity `json:"identity"`
	PID      int              `json:"pid,omitempty"`
	// Cleanup is set on a stop that had to force the plugin and whose end
	// was confirmed (Killed, or Exited with a cause): such a stop is a
	// completed stop, so the step succeeded, and its causes say what it
	// had to do (a *runtime.LocalTerminationTimeout, a
	// *runtime.RemoteForced). See docs/stopping.md.
	Cleanup *runtime.CleanupError `json:"cleanup,omitempty"`
}

// Phase is where a step stands in an Event.
type Phase string

// The phases of a step.
const (
	Began     Phase = "began"
	Succeeded Phase = "succeeded"
	Failed    Phase = "failed"
	// Skipped: a step it waits on failed or was skipped, or the apply was
	// cancelled before it began.
	Skipped Phase = "skipped"
)

// Event reports a step's progress.
type Event struct {
	Step  plan.Step `json:"step"`
	Phase Phase     `json:"phase"`
	// Result is set when the step ended (and for a failed stop, as far
	// as it went).
	Result Result `json:"result"`
	// Error says why the step failed or was skipped.
	Error string `json:"error,omitempty"`
	// Took is how long the step ran.
	Took time.Duration `json:"took"`
	At   time.Time     `json:"at"`
}

// Options tune Run.
type Options struct {
	// Parallelism bounds the steps running at once; 0 means 10.
	Parallelism int
	// Events, when set, receives every event, from one goroutine at a
	// time and in the order they happen.
	Events func(Event)
}

// DefaultParallelism is the default bound on steps running at once.
const DefaultParallelism = 10

// StepError is a step that failed.
type StepError struct {
	Step plan.Step
	Err  error
}

func (e *StepError) Error() string {
	prefix := fmt.Sprintf("%s %s: ", e.Step.Op, e.Step.Plugin)
	if msg := e.Err.Error(); strings.HasPrefix(msg, prefix) {
		return msg // a placement's errors name the step already
	}
	return prefix + e.Err.Error()
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrCancelled is among the errors of an apply whose context ended
// before every step began.
var ErrCancelled = errors.New("apply cancelled: steps not begun were skipped")

// ErrCancelled crosses the host's API as kind "cancelled", and comes
// back as itself (internal/errkind).
var _ = errkind.Sentinel("cancelled", http.StatusInternalServerError, ErrCancelled)

// Run carries out p's steps through ex. A step begins once every step it
// waits on has succeeded; a failed step skips the steps that wait on it,
// directly or not, and the others go on. A stop succeeds once the
// plugin's end is confirmed, forced or not: one that returns a
// *runtime.CleanupError with outcome Exited or Killed succeeds, with that
// error in its Result.Cleanup; only an unconfirmed stop fails
// (docs/stopping.md). Cancelling ctx begins no further step, lets the
// steps under way finish, and skips the rest. Run returns every failure,
// aggregated (each a *StepError), and ErrCancelled if ctx ended first;
// nil when every step succeeded.
//
// A graph that would leave a step never begun (a step waiting on one the
// plan lacks, a cycle, an id listed twice) is refused, as a
// *plan.VerifyError, before any step begins.
func Run(ctx context.Context, p *plan.Plan, ex Executor, opt Options) error {
	if err := p.VerifySteps(); err != nil {
		return err
	}
	if opt.Parallelism <= 0 {
		opt.Parallelism = DefaultParallelism
	}
	r := &execution{
		ex:      ex,
		opt:     opt,
		steps:   map[string]plan.Step{},
		waiting: map[string]int{},
		next:    map[string][]string{},
		begun:   map[string]bool{},
		edges:   map[string][]*edge{},
		until:   map[string]spec.Condition{},
		done:    make(chan outcome),
		reached: make(chan milestone),
	}
	for _, s := range p.Steps {
		r.steps[s.ID] = s
		r.waiting[s.ID] = len(s.After)
		for _, a := range s.After {
			r.next[a.Step] = append(r.next[a.Step], s.ID)
			r.edges[a.Step] = append(r.edges[a.Step], &edge{to: s.ID, until: a.Until})
			if a.Until == spec.UntilHealthy {
				r.until[a.Step] = spec.UntilHealthy
			}
		}
	}
	// A step that goes on to healthy is ready first: what waits for it
	// to succeed, which a start means ready, begins then.
	for id, edges := range r.edges {
		if r.until[id] == spec.UntilHealthy {
			for _, e := range edges {
				if e.until == "" {
					e.until = spec.UntilReady
				}
			}
		}
	}
	return r.run(ctx, p.Steps)
}

// execution is one Run under way: its steps, what each waits on, and its
// errors.
type execution struct {
	ex      Executor
	opt     Options
	steps   map[string]plan.Step
	waiting map[string]int      // steps not yet succeeded that each step waits on; -1 once skipped
	next    map[string][]string // the steps that wait on each
	begun   map[string]bool
	edges   map[string][]*edge        // the edges out of each step, to the steps that wait on it
	until   map[string]spec.Condition // how far each start goes: healthy when a step waits for that
	done    chan outcome
	reached chan milestone
	emitMu  sync.Mutex
	errs    *multierror.Error
}

type outcome struct {
	id  string
	err error
}

// edge is one step waiting on another, until a condition or (none) its
// success; done once it no longer holds the waiting step back.
type edge struct {
	to    string
	until spec.Condition
	done  bool
}

// milestone is a condition a start step's plugin reached.
type milestone struct {
	id    string
	until spec.Condition
}

func (r *execution) emit(e Event) {
	if r.opt.Events == nil {
		return
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	e.At = time.Now()
	r.opt.Events(e)
}

func (r *execution) run(ctx context.Context, order []plan.Step) error {
	// Steps begin in the plan's order among those ready, so a run is
	// repeatable: by wave, stops first, then by plugin.
	var ready []string
	for _, s := range order {
		if r.waiting[s.ID] == 0 {
			ready = append(ready, s.ID)
		}
	}
	running, left := 0, len(order)
	cancelled := false
	stepCtx := context.WithoutCancel(ctx)
	stop := ctx.Done()
	for left > 0 {
		for !cancelled && running < r.opt.Parallelism && len(ready) > 0 {
			id := ready[0]
			ready = ready[1:]
			running++
			r.begun[id] = true
			go r.do(stepCtx, r.steps[id])
		}
		if running == 0 {
			// Nothing runs and nothing can begin: the rest were cancelled
			// or wait on a failure, and have been skipped below.
			break
		}
		select {
		case m := <-r.reached:
			// The condition a step goes as far as is reached as it
			// succeeds: its success releases those edges, so that its
			// end is reported before the steps waiting on it begin.
			if m.until != r.until[m.id] {
				ready = r.release(m.id, func(e *edge) bool { return e.until == m.until }, ready)
			}
		case o := <-r.done:
			running--
			left--
			if o.err != nil {
				r.errs = multierror.Append(r.errs, &StepError{Step: r.steps[o.id], Err: o.err})
				left -= r.skip(o.id, fmt.Sprintf("%s failed", o.id))
				continue
			}
			ready = r.release(o.id, func(*edge) bool { return true }, ready)
		case <-stop:
			stop = nil // seen once
			cancelled = true
		}
	}
	if cancelled {
		// Every step not begun, ready or waiting, is skipped.
		for _, s := range order {
			if !r.begun[s.ID] {
				r.skipOne(s.ID, "the apply was cancelled")
			}
		}
		r.errs = multierror.Append(r.errs, ErrCancelled)
	}
	if err := r.unbegun(order); err != nil {
		r.errs = multierror.Append(r.errs, err)
	}
	return r.errs.ErrorOrNil()
}

// release marks done the edges out of step id that match, and returns
// ready with the steps no longer waiting on anything added.
func (r *execution) release(id string, match func(*edge) bool, ready []string) []string {
	for _, e := range r.edges[id] {
		if e.done || !match(e) {
			continue
		}
		e.done = true
		if r.waiting[e.to] > 0 {
			if r.waiting[e.to]--; r.waiting[e.to] == 0 {
				ready = append(ready, e.to)
			}
		}
	}
	return ready
}

// unbegun reports the steps that neither began nor were skipped, which
// only a graph VerifySteps refuses leaves: a run never succeeds without
// doing every step.
func (r *execution) unbegun(order []plan.Step) error {
	var never []string
	for _, s := range order {
		if !r.begun[s.ID] && r.waiting[s.ID] >= 0 {
			never = append(never, s.ID)
		}
	}
	if len(never) == 0 {
		return nil
	}
	return &plan.VerifyError{Reason: fmt.Sprintf("steps never began, waiting on steps that never ran: %s", strings.Join(never, ", "))}
}

// do runs one step, through its op's carrier (ops.go), and reports its
// outcome.
func (r *execution) do(ctx context.Context, s plan.Step) {
	r.emit(Event{Step: s, Phase: Began})
	began := time.Now()
	var (
		res Result
		err error
	)
	if carry, ok := carriers[s.Op]; ok {
		res, err = carry(r, ctx, s)
	} else {
		err = fmt.Errorf("unknown op %q", s.Op)
	}
	e := Event{Step: s, Phase: Succeeded, Result: res, Took: time.Since(began)}
	if err != nil {
		e.Phase, e.Error = Failed, err.Error()
	}
	r.emit(e)
	r.done <- outcome{id: s.ID, err: err}
}

// skip skips every step that waits on id, directly or not, and returns
// how many it skipped.
func (r *execution) skip(id, why string) int {
	n := 0
	for _, next := range r.next[id] {
		if r.waiting[next] > 0 {
			n += r.skipOne(next, why)
			n += r.skip(next, why)
		}
	}
	return n
}

// skipOne marks one step skipped, once, and returns 1, or 0 if it was.
func (r *execution) skipOne(id, why string) int {
	if r.waiting[id] < 0 {
		return 0
	}
	r.waiting[id] = -1
	r.emit(Event{Step: r.steps[id], Phase: Skipped, Error: "skipped: " + why})
	return 1
}
