package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/errkind"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// Apply brings about the spec of req and returns the plan it carried out.
// report receives the plan and every step's progress. Applies
// run one at a time: while one is under way another fails with a
// *hostapi.LockedError, or waits up to req.LockWait. Cancelling ctx begins no
// further step; the steps under way finish (see apply.Run).
func (h *Host) Apply(ctx context.Context, req ApplyRequest, report Report) (*plan.Plan, error) {
	return h.apply(ctx, req, report, true)
}

// apply is Apply; save records the spec as the last applied one (the
// host's own shutdown does not). The spec is loaded and checked, its
// files read (within spec.DefaultReadTimeout), before the apply lock is
// taken: nothing that can block holds it up.
func (h *Host) apply(ctx context.Context, req ApplyRequest, report Report, save bool) (*plan.Plan, error) {
	desired, err := h.desired(req.Source)
	report.parsed()
	if err != nil {
		h.metrics.applied(applyRefused, 0)
		return nil, err
	}
	if err := h.lockApply(ctx, req, save); err != nil {
		return nil, err
	}
	defer h.unlockApply()
	return h.applyLocked(ctx, req, desired, report, save)
}

// applyLocked is apply of desired, req's spec, with the apply lock held.
// When ctx ends (its client went away) or graft down preempts it, it
// begins no further step, and its steps stop waiting for their plugins
// (waits).
func (h *Host) applyLocked(ctx context.Context, req ApplyRequest, desired *spec.Spec, report Report, save bool) (p *plan.Plan, err error) {
	defer func(start time.Time) { h.metrics.applied(resultOf(err, p != nil), time.Since(start)) }(time.Now())
	ctx, release := h.waits(ctx)
	defer release()

	running := h.State()
	planned, err := h.plan(req, desired, running)
	if err != nil {
		return nil, err
	}
	p = planned
	if err := h.holdSockets(ctx, desired); err != nil {
		return nil, err
	}
	if save {
		src := req.Source
		src.DigestKey = "" // a saved plan's one-time key checked its digests; it keys nothing here
		a := &applied{Source: src, Digest: desired.Digest(), At: time.Now(), parsed: desired}
		if err := h.recordApplied(a); err != nil {
			return nil, fmt.Errorf("record the applied spec: %w", err)
		}
	}
	report.plan(p)
	h.runners.Refresh(desired)
	h.log.Info("apply", "holder", req.Holder, "start", p.Summary.Start, "replace", p.Summary.Replace,
		"restart", p.Summary.Restart, "stop", p.Summary.Stop, "steps", p.Summary.Steps)
	err = apply.Run(ctx, p, executor{h: h, desired: desired, stopped: map[string]*spec.Spec{}, waits: ctx}, apply.Options{
		Parallelism: req.Parallelism,
		Events: func(e apply.Event) {
			h.logEvent(e)
			report.event(e)
		},
	})
	h.closeUnusedLogs()
	h.syncCompleted() // one-shots updated in place keep their record, under the new hash
	h.runners.Prune(h.placements())
	h.pruneSockets(desired)
	h.pruneLastStops()
	if save && err == nil {
		h.pruneDigests()
	}
	return p, err
}

// pruneWait is how long a prune of the digest cache waits for the parses
// under way to end before it gives up, until the next one.
const pruneWait = 2 * time.Second

// pruneDigests drops from the digest cache (digests/) the tables of every
// file but those the last applied spec read: after an apply that
// succeeded, and after graft down forgot the spec (docs/state-dir.md, "The
// digest cache").
//
// The rule that keeps a prune from taking away what a plan under way
// needs: it runs with the apply lock held, so no other apply records a
// spec meanwhile, and what it keeps is the spec recorded as applied; and
// every parse, the host's (an apply's spec, a Plan) and the CLI's (graft
// plan, validate, apply) alike, holds the cache shared while it digests
// (contentdigest.Cache.Hold), which the prune waits for, up to pruneWait,
// and holds alone while it removes: a parse never finds a table gone
// halfway. What a parse digested and no apply recorded (a plan not
// applied, a saved plan applied later) is not kept past the next prune:
// its files are read again when they are next planned.
func (h *Host) pruneDigests() {
	h.mu.Lock()
	a := h.spec
	h.mu.Unlock()
	var keep []string
	if a != nil && a.parsed != nil {
		keep = a.parsed.Sources()
	}
	if err := h.digests.Prune(keep, pruneWait); err != nil {
		h.log.Warn("the digest cache was not pruned; the next apply prunes it", "err", err)
	}
}

// lockApply takes the apply lock, waiting as req allows, or for the
// host's own start-up apply, which any apply waits for. A preemptible
// apply is one graft down may preempt (preempt.go).
func (h *Host) lockApply(ctx context.Context, req ApplyRequest, preemptible bool) error {
	held, freed, ok := h.tryLock(req.Holder, preemptible)
	if ok {
		return nil
	}
	wait := req.LockWait
	if held.who == startupHolder {
		wait = forever // part of starting the host: wait for it
	}
	if wait <= 0 {
		return &hostapi.LockedError{Holder: held.who, Since: held.since}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-freed:
		case <-timer.C:
			return &hostapi.LockedError{Holder: held.who, Since: held.since}
		case <-ctx.Done():
			return ctx.Err()
		}
		if held, freed, ok = h.tryLock(req.Holder, preemptible); ok {
			return nil
		}
	}
}

// tryLock takes the apply lock for who, if it is free; else it returns
// who holds it, and a channel closed when it is let go. The lock and its
// holder change together, under h.mu: no one sees the lock held by no
// one.
func (h *Host) tryLock(who string, preemptible bool) (holder, <-chan struct{}, bool) {
	h.mu.Lock()
	select {
	case h.applying <- struct{}{}:
	default:
		held, freed := h.holder, h.freed
		h.mu.Unlock()
		return held, freed, false
	}
	if who == "" {
		who = "an unnamed client"
	}
	hd := holder{who: who, since: time.Now()}
	if preemptible {
		hd.preempted, hd.preempt = context.WithCancelCause(context.Background())
	}
	h.holder = hd
	h.freed = make(chan struct{})
	h.mu.Unlock()
	h.changed.notify()
	return holder{}, nil, true
}

// forever is how long an apply waits for the lock when it must have it:
// the host's start-up, graft down. Its client's going away ends the wait.
const forever = 24 * time.Hour

func (h *Host) unlockApply() {
	h.mu.Lock()
	if h.holder.preempt != nil {
		h.holder.preempt(nil)
	}
	h.holder = holder{}
	<-h.applying
	close(h.freed)
	h.mu.Unlock()
	h.changed.notify()
}

// desired parses the spec to bring about, its digests keyed with the
// host's key; no source is the empty spec, of the last applied spec's
// project.
// The last applied spec's source is not parsed again: it was, once, when
// it was recorded or read.
func (h *Host) desired(src spec.Source) (*spec.Spec, error) {
	h.mu.Lock()
	kept := h.spec
	h.mu.Unlock()
	if kept != nil && kept.parsed != nil && src.Equal(kept.Source) && !kept.parsed.Stale(h.digests) {
		return kept.parsed, nil
	}
	s, err := h.parseDesired(src, kept)
	if err != nil {
		return nil, err
	}
	return h.planner.Keyed(s), nil
}

func (h *Host) parseDesired(src spec.Source, kept *applied) (*spec.Spec, error) {
	if src.YAML != "" {
		return src.SpecToStart(h.digests)
	}
	empty := "plugins: {}\n"
	if kept != nil && kept.parsed != nil {
		empty = "name: " + kept.parsed.Name + "\n" + empty
	}
	return spec.ParseIn(filepath.Join(h.dir, "nothing"), h.dir, []byte(empty))
}

// plan is the plan of an apply: a saved one, checked against what runs
// and against the plan its spec and that state give (plan.Plan.Verify), or
// a fresh diff.
func (h *Host) plan(req ApplyRequest, desired *spec.Spec, running *plan.State) (*plan.Plan, error) {
	if req.Plan == nil {
		p, err := h.planner.Plan(desired, running, plan.Options{Replace: req.Restart})
		if err == nil && req.Source.YAML == "" {
			for i := range p.Changes {
				p.Changes[i].Reason = "everything stops: " + req.Holder
			}
		}
		return p, err
	}
	return h.planner.Saved(req.Plan, req.Source, desired, running)
}

func (h *Host) logEvent(e apply.Event) {
	attrs := []any{"step", e.Step.ID}
	switch e.Phase {
	case apply.Began:
		h.log.Info("step began", attrs...)
	case apply.Succeeded:
		if c := e.Result.Cleanup; c != nil {
			h.log.Warn("step done, forced", append(attrs, "outcome", e.Result.Outcome, "took", e.Took, "cause", c.Causes.Error())...)
			return
		}
		if e.Step.Op == plan.OpStop {
			attrs = append(attrs, "outcome", e.Result.Outcome)
		} else {
			attrs = append(attrs, "instance", e.Result.Identity.ID, "generation", e.Result.Identity.Generation, "pid", e.Result.PID)
		}
		h.log.Info("step done", append(attrs, "took", e.Took)...)
	default:
		h.log.Warn("step "+string(e.Phase), append(attrs, "err", e.Error)...)
	}
}

// executor carries out an apply's steps on the host's plugins.
type executor struct {
	h       *Host
	desired *spec.Spec
	// stopped holds, by plugin, the spec that each plugin this apply
	// stopped had been started from: the version a failed replacement
	// rolls back to (update.onFailure). Shared by the apply's executors.
	stopped map[string]*spec.Spec
	// waits ends the waits of its starts (for a one-shot's completion, a
	// plugin's health), not the starts: the apply's client went away, or
	// graft down preempted it.
	waits context.Context
}

// Stop stops the plugin and forgets it, once its end is confirmed. A stop
// that had to force the plugin still succeeds (apply.Run reports its
// *runtime.CleanupError as a warning); an unconfirmed one keeps the entry,
// status unconfirmed ("may still be running"): the next apply stops it
// again, and its runner refuses a replacement until it confirms.
func (x executor) Stop(ctx context.Context, name string) (apply.Result, error) {
	e := x.h.entry(name)
	if e == nil {
		return apply.Result{Outcome: runtime.Exited}, nil
	}
	outcome, err := x.h.stop(ctx, name, e)
	if p := x.desired.Plugins[name]; p != nil && p.Update != nil && e.from != nil && x.stopped != nil {
		x.h.mu.Lock()
		x.stopped[name] = e.from
		x.h.mu.Unlock()
	}
	// A completed one-shot that leaves the spec, is replaced or runs
	// again (graft run: a replace) is forgotten as it stops, before
	// anything starts again: a host killed meanwhile runs it again.
	x.h.syncCompleted()
	return apply.Result{Outcome: outcome}, err
}

// stop stops e, name's entry, records how the stop ended, and forgets e
// unless its end is unconfirmed.
func (h *Host) stop(ctx context.Context, name string, e *entry) (runtime.Outcome, error) {
	began := time.Now()
	outcome, err := e.supervisor.Stop(ctx)
	took := time.Since(began)
	h.metrics.stopped(name, outcome, took)
	last := &hostapi.LastStop{Outcome: string(outcome), At: time.Now(), TookMillis: took.Milliseconds()}
	for _, c := range errkind.List(err) {
		last.Causes = append(last.Causes, hostapi.StopCause{Kind: runtime.CauseKind(c), Message: c.Error()})
	}
	h.mu.Lock()
	h.lastStops[name] = last
	if outcome != runtime.Unconfirmed && h.plugins[name] == e {
		delete(h.plugins, name)
	}
	h.mu.Unlock()
	h.changed.notify()
	return outcome, err
}

// Start starts the plugin as the desired spec says, and waits until it
// reaches until, or, for a one-shot, completes (apply.Executor). A failed
// plugin of the same name (perhaps retrying) is stopped first.
func (x executor) Start(ctx context.Context, name string, until spec.Condition, reached func(spec.Condition)) (apply.Result, error) {
	p := x.desired.Plugins[name]
	if p == nil { // plan.Plan.Verify refuses such a plan; never crash on one
		return apply.Result{}, fmt.Errorf("start %s: not in the spec being applied", name)
	}
	if old := x.h.entry(name); old != nil {
		// A failed plugin, perhaps retrying, or one whose stop was not
		// confirmed: nothing new starts beside it until its end is.
		if outcome, err := x.h.stop(ctx, name, old); outcome == runtime.Unconfirmed {
			return apply.Result{}, err
		}
	}
	e, err := x.newEntry(name, p, true)
	if err != nil {
		return apply.Result{}, err
	}
	if x.replaces(name) {
		st, err := x.awaitNew(ctx, e, p, false, until, reached)
		if err != nil && p.RollsBack() {
			return x.rollback(ctx, name, err)
		}
		return apply.Result{Identity: st.Identity, PID: st.PID}, err
	}
	// The start goes on whatever becomes of the apply; only its wait ends.
	st, err := e.supervisor.StartUntil(x.waits, until, reached)
	switch {
	case !p.Once.On:
	case err == nil:
		x.h.syncCompleted()
	case errors.As(err, new(*runtime.WaitEndedError)):
		x.h.recordWhenDone(name, e) // left running: its completion is still recorded
	}
	return apply.Result{Identity: st.Identity, PID: st.PID}, err
}

// newEntry makes the entry of plugin p, name, of the desired spec, with
// its supervisor, not started; with track, it is the plugin's entry from
// now on.
func (x executor) newEntry(name string, p *spec.Plugin, track bool) (*entry, error) {
	out, err := x.h.logOf(name)
	if err != nil {
		return nil, err
	}
	pl, err := x.h.placement(x.desired, p)
	if err != nil {
		return nil, err
	}
	req := runtime.Request{Project: x.desired.Name, Dir: x.desired.Dir, Output: out, Log: x.h.log}.For(p)
	e := &entry{record: plan.Applied(x.desired, name), placement: pl, from: x.desired}

	// The addresses of floating providers are read and the entry recorded
	// under one lock, so a leader change either shows in the environment or
	// finds the entry to restart (leaderChanged).
	x.h.mu.Lock()
	req.Env = x.h.providerEnv(x.desired, p)
	if pl == runtime.Placement(x.h.local) || pl == runtime.Placement(x.h.floating) {
		req.Tag = hostTag{Hash: e.record.Hash, Env: req.Env}.encode() // for the next host, which adopts it by it (adopt.go)
	}
	e.supervisor = runtime.NewSupervisor(pl, req)
	e.supervisor.OnChange(x.h.changed.notify)
	e.env = req.Env
	if track {
		x.h.plugins[name] = e
	}
	x.h.mu.Unlock()
	x.h.metrics.started(name)
	x.h.changed.notify()
	return e, nil
}

// Swap replaces the plugin start-first (apply.Swapper, docs/semantics.md
// "Start-first replacement"): its new process starts beside the running
// one, on the sockets the host holds for it, and once it is ready (and
// healthy, when it has a health check) and has reached until, the old one
// stops with the stop sequence and the new one is the plugin's. A new one
// that does not get there is stopped, and the old one runs on.
func (x executor) Swap(ctx context.Context, name string, until spec.Condition, reached func(spec.Condition)) (apply.Result, error) {
	p := x.desired.Plugins[name]
	old := x.h.entry(name)
	if p == nil || old == nil || old.supervisor.State().Status != runtime.Running {
		return x.Start(ctx, name, until, reached) // nothing runs to serve meanwhile
	}
	want := newCondition(p, until)
	e, err := x.newEntry(name, p, false)
	if err != nil {
		return apply.Result{}, err
	}
	st, err := x.awaitNew(ctx, e, p, true, until, reached)
	if err != nil {
		return apply.Result{}, fmt.Errorf("start %s start-first: its new process did not get %s, and was stopped; the old one runs on: %w", name, want, err)
	}
	x.h.log.Info("start-first: the new process is "+string(want)+"; stopping the old one", "plugin", name, "pid", st.PID)
	outcome, err := x.h.stop(ctx, name, old)
	x.h.mu.Lock()
	if outcome != runtime.Unconfirmed || x.h.plugins[name] == nil {
		x.h.plugins[name] = e
	}
	x.h.mu.Unlock()
	x.h.changed.notify()
	if outcome == runtime.Unconfirmed {
		// The old one may still run: it stays the plugin's, for the next
		// apply to stop again, and the new one is stopped.
		e.supervisor.Stop(context.WithoutCancel(ctx))
		return apply.Result{Outcome: outcome}, err
	}
	return apply.Result{Identity: st.Identity, PID: st.PID}, nil
}

// newCondition is what the new process of a replacement of p must reach
// before it counts: until, but at least ready, and healthy when p has a
// health check.
func newCondition(p *spec.Plugin, until spec.Condition) spec.Condition {
	switch {
	case p.Health != nil:
		return spec.UntilHealthy
	case until == "" || until == spec.UntilStarted:
		return spec.UntilReady
	}
	return until
}

// replaces reports whether a start of name replaces a version of it
// that this apply stopped: what update's onFailure and deadline are for.
func (x executor) replaces(name string) bool {
	if p := x.desired.Plugins[name]; p == nil || p.Update == nil {
		return false
	}
	x.h.mu.Lock()
	defer x.h.mu.Unlock()
	return x.stopped[name] != nil
}

// awaitNew starts e, the new process of a replacement of p (beside the
// running one, with overlap: start-first), waits until it has reached
// newCondition within update.deadline, and stops it when it does not
// (it exited, failed its checks, or the deadline passed). An apply that
// ends meanwhile ends the wait alone, as for any start.
func (x executor) awaitNew(ctx context.Context, e *entry, p *spec.Plugin, overlap bool, until spec.Condition, reached func(spec.Condition)) (runtime.State, error) {
	want := newCondition(p, until)
	wait, cancel := x.waits, context.CancelFunc(func() {})
	deadline := time.Duration(0)
	if u := p.Update; u != nil && u.Deadline.Std() > 0 {
		deadline = u.Deadline.Std()
		wait, cancel = context.WithTimeout(x.waits, deadline)
	}
	// Until it is the plugin's, its restarts (after a failed health
	// check, say) start beside the old process too: a runner's start
	// without overlap would replace that one.
	e.supervisor.ForStarts(func(r *runtime.Request) {
		if deadline > 0 {
			// The deadline bounds it all: the ready wait as its ready
			// timeout would, and the wait for healthy after it.
			r.BoundReady(deadline)
		}
		r.Overlap = overlap
	})
	defer e.supervisor.ForStarts(nil)
	defer cancel()
	st, err := e.supervisor.StartUntil(wait, want, reached)
	if err == nil || x.waits.Err() != nil {
		return st, err
	}
	if wait.Err() != nil {
		err = fmt.Errorf("its new process was not %s within update.deadline (%s)", want, p.Update.Deadline.Std())
	}
	e.supervisor.Stop(context.WithoutCancel(ctx))
	return st, err
}

// rollback runs again the previous version of name, from the spec this
// apply's stop of it found it started from, once its new process failed
// with cause (and was stopped): the step fails with cause, and says what
// runs.
func (x executor) rollback(ctx context.Context, name string, cause error) (apply.Result, error) {
	x.h.mu.Lock()
	from := x.stopped[name]
	x.h.mu.Unlock()
	if from == nil || from.Plugins[name] == nil {
		return apply.Result{}, fmt.Errorf("the new version of %s failed, and no previous version of it ran before this apply to roll back to: %w", name, cause)
	}
	if changed := from.Changed(name, x.h.digests); len(changed) > 0 {
		// Its start would run what replaced it, under its old spec.
		return apply.Result{}, fmt.Errorf("the new version of %s failed, and its previous version cannot be restored: %s changed since it was applied (graft keeps a version's spec, not its files): %w",
			name, strings.Join(changed, ", "), cause)
	}
	x.h.log.Warn("rolling back: the new process failed; starting the previous version again", "plugin", name, "err", cause)
	prev := executor{h: x.h, desired: from, waits: x.waits}
	res, err := prev.Start(context.WithoutCancel(ctx), name, spec.UntilReady, func(spec.Condition) {})
	if err != nil {
		return res, fmt.Errorf("the new version of %s failed, and so did the rollback to its previous version (%v): %w", name, err, cause)
	}
	return res, fmt.Errorf("the new version of %s failed, and was rolled back: its previous version runs again (pid %d): %w", name, res.PID, cause)
}

// pruneLastStops forgets how plugins the host no longer tracks stopped.
func (h *Host) pruneLastStops() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range h.lastStops {
		if h.plugins[name] == nil {
			delete(h.lastStops, name)
		}
	}
	for name := range h.epochs {
		if h.plugins[name] == nil {
			delete(h.epochs, name)
		}
	}
}

// entry is one plugin the host runs or tracks.
type entry struct {
	record     plan.Record // what its spec decides (plan.Applied)
	supervisor *runtime.Supervisor
	placement  runtime.Placement // where it runs; nil for a one-shot that completed under an earlier host (restoreCompleted)
	// from is the spec it was started from (for an adopted or resumed
	// one, the applied spec its host found): the version a failed
	// replacement of it rolls back to.
	from *spec.Spec
	env  map[string]string // what the host added to its environment
	// adopted is set when its process is one an earlier host started
	// (adopt.go).
	adopted *hostapi.Adopted
}

// placements are the placements of the plugins the host runs or tracks.
func (h *Host) placements() map[runtime.Placement]bool {
	used := map[runtime.Placement]bool{}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.plugins {
		if e.placement != nil {
			used[e.placement] = true
		}
	}
	return used
}

func (h *Host) entry(name string) *entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.plugins[name]
}
