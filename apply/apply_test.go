package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script is an Executor that records what it is asked, takes delay per
// step, and fails the steps in fail.
type script struct {
	delay time.Duration
	fail  map[string]bool
	errs  map[string]error // what a step returns instead of succeeding
	gate  chan struct{}    // when set, every step waits for it
	// milestones, when set, runs at the beginning of each start step
	// with its until and reached.
	milestones func(plugin string, until spec.Condition, reached func(spec.Condition))

	mu      sync.Mutex
	ended   map[string]time.Time
	began   map[string]time.Time
	now     int
	maxConc int
}

func newScript(delay time.Duration, fail ...string) *script {
	s := &script{delay: delay, fail: map[string]bool{}, ended: map[string]time.Time{}, began: map[string]time.Time{}}
	for _, f := range fail {
		s.fail[f] = true
	}
	return s
}

func (s *script) step(ctx context.Context, id string) (Result, error) {
	s.mu.Lock()
	s.began[id] = time.Now()
	s.now++
	s.maxConc = max(s.maxConc, s.now)
	s.mu.Unlock()
	if s.gate != nil {
		<-s.gate
	}
	time.Sleep(s.delay)
	if ctx.Err() != nil {
		return Result{}, errors.New("a step's context must not be cancelled")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now--
	s.ended[id] = time.Now()
	if s.fail[id] {
		return Result{}, fmt.Errorf("%s broke", id)
	}
	if err := s.errs[id]; err != nil {
		return Result{}, err
	}
	return Result{Outcome: runtime.Exited, Identity: runtime.Identity{ID: id, Generation: 1}}, nil
}

func (s *script) Stop(ctx context.Context, p string) (Result, error) {
	return s.step(ctx, plan.StepID(plan.OpStop, p))
}
func (s *script) Start(ctx context.Context, p string, until spec.Condition, reached func(spec.Condition)) (Result, error) {
	if s.milestones != nil {
		s.milestones(p, until, reached)
	}
	return s.step(ctx, plan.StepID(plan.OpStart, p))
}

// chainPlan: db ← store ← api ← web all replaced, plus independent x.
func chainPlan(t *testing.T) *plan.Plan {
	before := "plugins:\n  db: {command: [db]}\n  store: {command: [s], uses: [db]}\n  api: {command: [a], uses: [store]}\n  web: {command: [w], uses: [api]}\n  x: {command: [x]}\n"
	after := "plugins:\n  db: {command: [db, -v2]}\n  store: {command: [s], uses: [db]}\n  api: {command: [a], uses: [store]}\n  web: {command: [w], uses: [api]}\n  x: {command: [x, -v2]}\n"
	old, err := spec.Parse("plugins.yaml", []byte(before))
	require.NoError(t, err)
	desired, err := spec.Parse("plugins.yaml", []byte(after))
	require.NoError(t, err)
	st := &plan.State{}
	for name := range old.Plugins {
		r := plan.Applied(old, name)
		r.Status = plan.Running
		st.Plugins = append(st.Plugins, r)
	}
	p, err := plan.Diff(desired, st)
	require.NoError(t, err)
	return p
}

func TestOrder(t *testing.T) {
	p := chainPlan(t)
	ex := newScript(5 * time.Millisecond)
	var events []Event
	require.NoError(t, Run(context.Background(), p, ex, Options{Parallelism: 4, Events: func(e Event) { events = append(events, e) }}))
	for _, s := range p.Steps {
		require.Contains(t, ex.ended, s.ID)
		for _, a := range s.After {
			assert.False(t, ex.began[s.ID].Before(ex.ended[a.Step]), "%s began before %s ended", s.ID, a)
		}
	}
	assert.Len(t, events, 2*len(p.Steps))
	seen := map[string]Phase{}
	for _, e := range events {
		if e.Phase == Began {
			assert.NotContains(t, seen, e.Step.ID)
		} else {
			assert.Equal(t, Began, seen[e.Step.ID], "%s ended before it began", e.Step.ID)
			assert.Equal(t, Succeeded, e.Phase)
		}
		seen[e.Step.ID] = e.Phase
	}
}

func TestParallelism(t *testing.T) {
	var b []byte
	b = append(b, "plugins:\n"...)
	for i := range 20 {
		b = fmt.Appendf(b, "  p%d: {command: [p]}\n", i)
	}
	desired, err := spec.Parse("plugins.yaml", b)
	require.NoError(t, err)
	p, err := plan.Diff(desired, nil)
	require.NoError(t, err)
	for _, n := range []int{1, 3, 10} {
		ex := newScript(10 * time.Millisecond)
		require.NoError(t, Run(context.Background(), p, ex, Options{Parallelism: n}))
		assert.Equal(t, n, ex.maxConc, "parallelism %d is used and not passed", n)
	}
}

// TestFailureSkipsDependents: a failed step skips what waits on it,
// directly or not; independent steps finish; the error holds the step.
func TestFailureSkipsDependents(t *testing.T) {
	p := chainPlan(t)
	ex := newScript(time.Millisecond, "stop:store")
	var skipped []string
	err := Run(context.Background(), p, ex, Options{Events: func(e Event) {
		if e.Phase == Skipped {
			skipped = append(skipped, e.Step.ID)
			assert.Equal(t, "skipped: stop:store failed", e.Error)
		}
	}})
	var se *StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "stop:store", se.Step.ID)
	assert.ErrorContains(t, err, "stop store: stop:store broke")
	assert.ElementsMatch(t, []string{"stop:db", "start:db", "start:store", "start:api", "start:web"}, skipped)
	assert.Contains(t, ex.ended, "start:x", "an independent branch finishes")
	assert.Contains(t, ex.ended, "stop:web")
	assert.Contains(t, ex.ended, "stop:api")
}

// TestCancel: cancelling begins nothing more, lets the steps under way
// finish with a live context, and skips the rest.
func TestCancel(t *testing.T) {
	p := chainPlan(t)
	ex := newScript(0)
	ex.gate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	var mu sync.Mutex
	var skipped int
	go func() {
		done <- Run(ctx, p, ex, Options{Parallelism: 2, Events: func(e Event) {
			if e.Phase == Skipped {
				mu.Lock()
				skipped++
				mu.Unlock()
			}
		}})
	}()
	require.Eventually(t, func() bool { ex.mu.Lock(); defer ex.mu.Unlock(); return ex.now == 2 }, time.Second, time.Millisecond)
	cancel()
	time.Sleep(20 * time.Millisecond) // Run sees the cancellation while both steps still run
	close(ex.gate)
	err := <-done
	assert.ErrorIs(t, err, ErrCancelled)
	assert.Len(t, ex.ended, 2, "the two steps under way finished")
	assert.Equal(t, len(p.Steps)-2, skipped)
}

func cleanup(outcome runtime.Outcome, cause error) *runtime.CleanupError {
	return &runtime.CleanupError{Plugin: "store", Outcome: outcome, Causes: multierror.Append(nil, cause)}
}

// TestForcedStopCompletes: a stop that had to force its plugin, whose end
// was confirmed, succeeds; what waits on it goes on; the event carries
// the cleanup error, whose causes errors.As finds.
func TestForcedStopCompletes(t *testing.T) {
	for _, outcome := range []runtime.Outcome{runtime.Killed, runtime.Exited} {
		t.Run(string(outcome), func(t *testing.T) {
			p := chainPlan(t)
			ex := newScript(time.Millisecond)
			ex.errs = map[string]error{"stop:store": cleanup(outcome, &runtime.LocalTerminationTimeout{Plugin: "store", Window: time.Second})}
			var stop Event
			err := Run(context.Background(), p, ex, Options{Events: func(e Event) {
				if e.Step.ID == "stop:store" && e.Phase != Began {
					stop = e
				}
			}})
			require.NoError(t, err)
			for _, s := range p.Steps {
				assert.Contains(t, ex.ended, s.ID, "every step ran")
			}
			assert.Equal(t, Succeeded, stop.Phase)
			assert.Empty(t, stop.Error)
			assert.Equal(t, outcome, stop.Result.Outcome)
			var ltt *runtime.LocalTerminationTimeout
			require.ErrorAs(t, stop.Result.Cleanup, &ltt)
			assert.Equal(t, time.Second, ltt.Window)
		})
	}
}

// TestUnconfirmedStopFails: only a stop whose end no one confirmed fails
// its step, and skips what waits on it.
func TestUnconfirmedStopFails(t *testing.T) {
	p := chainPlan(t)
	ex := newScript(time.Millisecond)
	ex.errs = map[string]error{"stop:store": cleanup(runtime.Unconfirmed, &runtime.RemoteTerminationUnconfirmed{Plugin: "store", Runner: "edge", Cause: errors.New("no answer")})}
	err := Run(context.Background(), p, ex, Options{})
	var unconfirmed *runtime.RemoteTerminationUnconfirmed
	require.ErrorAs(t, err, &unconfirmed)
	assert.Equal(t, "edge", unconfirmed.Runner)
	assert.NotContains(t, ex.ended, "start:store")
	assert.NotContains(t, ex.ended, "stop:db")
	assert.Contains(t, ex.ended, "start:x")
}

// TestRefusesBrokenGraphs: a step waiting on a step the plan lacks, or a
// cycle, is refused before any step begins, as a *plan.VerifyError; such a
// run never reports success with work left undone.
func TestRefusesBrokenGraphs(t *testing.T) {
	for name, edit := range map[string]func(p *plan.Plan){
		"missing": func(p *plan.Plan) {
			p.Steps[len(p.Steps)-1].After = append(p.Steps[len(p.Steps)-1].After, plan.Edge{Step: "stop:nope"})
		},
		"cycle": func(p *plan.Plan) { p.Steps[0].After = plan.After(p.Steps[len(p.Steps)-1].ID) },
		"twice": func(p *plan.Plan) { p.Steps = append(p.Steps, p.Steps[0]) },
	} {
		t.Run(name, func(t *testing.T) {
			p := chainPlan(t)
			edit(p)
			ex := newScript(0)
			var events []Event
			err := Run(context.Background(), p, ex, Options{Events: func(e Event) { events = append(events, e) }})
			var bad *plan.VerifyError
			require.ErrorAs(t, err, &bad)
			assert.Empty(t, ex.began, "no step began")
			assert.Empty(t, events)
		})
	}
}

// TestUnbegunIsAnError: were a graph VerifySteps refuses ever run, the
// steps it left waiting make the run fail, naming them.
func TestUnbegunIsAnError(t *testing.T) {
	steps := []plan.Step{
		{ID: "stop:a", Op: plan.OpStop, Plugin: "a"},
		{ID: "start:a", Op: plan.OpStart, Plugin: "a", After: plan.After("stop:a", "stop:nope")},
		{ID: "stop:b", Op: plan.OpStop, Plugin: "b", After: plan.After("start:b")},
		{ID: "start:b", Op: plan.OpStart, Plugin: "b", After: plan.After("stop:b")},
	}
	ex := newScript(0)
	r := &execution{ex: ex, opt: Options{Parallelism: 2}, steps: map[string]plan.Step{}, waiting: map[string]int{},
		next: map[string][]string{}, begun: map[string]bool{}, edges: map[string][]*edge{}, done: make(chan outcome)}
	for _, s := range steps {
		r.steps[s.ID] = s
		r.waiting[s.ID] = len(s.After)
		for _, a := range s.After {
			r.next[a.Step] = append(r.next[a.Step], s.ID)
			r.edges[a.Step] = append(r.edges[a.Step], &edge{to: s.ID})
		}
	}
	err := r.run(context.Background(), steps)
	var bad *plan.VerifyError
	require.ErrorAs(t, err, &bad)
	assert.Contains(t, err.Error(), "steps never began, waiting on steps that never ran: start:a, stop:b, start:b")
	assert.Contains(t, ex.ended, "stop:a", "the step that could run did")
}
