package host

import (
	"context"
	"errors"

	"github.com/graftland/graft/spec"
)

// No wait inside the apply lock outlasts the apply's reason to wait
// (docs/semantics.md, "One-shot plugins" and "graft down"): an apply
// whose client went away, or that graft down preempts, begins no further
// step, and its steps stop waiting for their plugins, which are left
// running. The steps under way that do work (a stop sequence, a start
// until its ready check) end within their own timeouts, and the lock is
// given back.

// PreemptedError is why an apply stopped waiting: graft down preempted it.
type PreemptedError struct {
	// By is who asked for graft down.
	By string
}

func (e *PreemptedError) Error() string {
	if e.By == "" {
		return "graft down preempted this apply"
	}
	return "graft down (" + e.By + ") preempted this apply"
}

// errClientGone is why an apply whose request ended stopped waiting.
var errClientGone = errors.New("its client went away")

// waits returns the context of an apply with the lock held: it ends when
// ctx does, with errClientGone, or when graft down preempts the apply,
// with a *PreemptedError. release frees it.
func (h *Host) waits(ctx context.Context) (waits context.Context, release func()) {
	h.mu.Lock()
	preempted := h.holder.preempted
	h.mu.Unlock()
	waits, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stops := []func() bool{context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if errors.Is(cause, context.Canceled) {
			cause = errClientGone
		}
		cancel(cause)
	})}
	if preempted != nil {
		stops = append(stops, context.AfterFunc(preempted, func() { cancel(context.Cause(preempted)) }))
	}
	return waits, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// preemptApply preempts the apply under way, if graft down may: cause
// says why.
func (h *Host) preemptApply(cause error) {
	h.mu.Lock()
	hd := h.holder
	h.mu.Unlock()
	if hd.preempt == nil {
		return
	}
	h.log.Warn("preempting the apply under way", "holder", hd.who, "since", hd.since, "cause", cause)
	hd.preempt(cause)
}

// recordWhenDone records the one-shot name, whose apply stopped waiting
// for it, once it completes (or fails for good): a host restarted after
// that does not run it again.
func (h *Host) recordWhenDone(name string, e *entry) {
	h.background.Go(func(ctx context.Context) {
		err := e.supervisor.Await(ctx, spec.UntilCompleted)
		if ctx.Err() == nil {
			h.log.Info("a one-shot left running by its apply ended", "plugin", name, "status", e.supervisor.State().Status, "err", err)
		}
		h.syncCompleted()
	})
}
