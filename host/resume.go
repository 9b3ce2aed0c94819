package host

import (
	"context"
	"time"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/remote"
	"github.com/graftland/graft/spec"
)

// A host restarted or upgraded while its lease on a runner of its own
// still runs resumes its session there (docs/upgrade.md): the processes
// under it run on, adopted with the instance and generation the runner
// gave them; the runner's journal, not the host, says what they are. The
// runner embedded in the host ends with the host's program, and its
// plugins start again.

// resumeWait bounds the resumption of the sessions at open: a runner
// that does not answer in time is left to the start-up's apply.
const resumeWait = 20 * time.Second

// resumeRunners resumes the session recorded with each runner of the
// last applied spec and adopts the processes under it that its runner
// plugins claim; it stops those no plugin claims. Called from adopt,
// before anything starts.
func (h *Host) resumeRunners(applied *spec.Spec, now time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	for _, res := range h.runners.Resume(ctx, applied) {
		if res.Err != nil {
			h.log.Warn("resume the session with a runner: its plugins start again", "runner", res.Runner, "err", res.Err)
			continue
		}
		if res.Remote.SessionID() == "" {
			h.log.Info("the session with a runner is gone (its lease ran out): its plugins start again", "runner", res.Runner)
			continue
		}
		claims := h.claims(applied, res.Runner)
		for _, p := range res.Procs {
			pl := claims[p.Instance]
			if pl == nil {
				h.log.Warn("a process under the session an earlier host held is not a runner plugin of the last applied spec: stopped",
					"runner", res.Runner, "instance", p.Instance, "generation", p.Generation)
				h.stopResumed(res.Remote, p)
				continue
			}
			delete(claims, p.Instance)
			if err := h.resumeOne(applied, pl, res.Remote, p, now); err != nil {
				h.log.Error("adopt a process under the session an earlier host held: stopped", "plugin", pl.Name, "instance", p.Instance, "err", err)
				h.stopResumed(res.Remote, p)
			}
		}
	}
}

// claims are the runner plugins of applied on runner, by the instance
// each runs as there, that no process was adopted for yet.
func (h *Host) claims(applied *spec.Spec, runner string) map[string]*spec.Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]*spec.Plugin{}
	for _, p := range applied.Plugins {
		if p.Run.Traits().Runner && p.Runner == runner && h.plugins[p.Name] == nil {
			out[remote.Instance(runtime.Request{Project: applied.Name}.For(p))] = p
		}
	}
	return out
}

// resumeOne adopts p, a process of plugin pl of the last applied spec
// under the session r resumed, as adoptOne does a local one.
func (h *Host) resumeOne(applied *spec.Spec, pl *spec.Plugin, r *remote.Remote, p remote.Resumed, now time.Time) error {
	out, err := h.logOf(pl.Name)
	if err != nil {
		return err
	}
	e := &entry{record: plan.Applied(applied, pl.Name), placement: r, from: applied}
	req := runtime.Request{Project: applied.Name, Dir: applied.Dir, Output: out, Log: h.log}.For(pl)
	h.mu.Lock()
	req.Env = h.providerEnv(applied, pl)
	h.mu.Unlock()
	handle, err := r.Adopt(req, p)
	if err != nil {
		return err
	}
	e.env = req.Env
	// When its earlier host went, only that host knew: the gap counted is
	// from this host's start, at least.
	h.keepAdopted(pl.Name, e, req, handle, p.StartedAt, h.started, now)
	h.log.Info("resumed a process under the session an earlier host held", "plugin", pl.Name, "runner", pl.Runner,
		"instance", p.Instance, "generation", p.Generation, "pid", p.PID)
	return nil
}

// stopResumed stops p, a process under a resumed session that no plugin
// takes, through that session, in the background (Shutdown waits).
func (h *Host) stopResumed(r *remote.Remote, p remote.Resumed) {
	handle, err := r.Adopt(runtime.Request{Name: p.Instance, Log: h.log}, p)
	if err != nil {
		h.log.Error("stop a process under a resumed session", "instance", p.Instance, "err", err)
		return
	}
	h.background.Go(func(ctx context.Context) {
		if _, err := handle.Stop(ctx); err != nil {
			h.log.Warn("stop a process under a resumed session", "instance", p.Instance, "generation", p.Generation, "err", err)
		}
	})
}
