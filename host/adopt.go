package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/floating"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/spec"
)

// A host's local plugins outlive it (docs/upgrade.md): the init of its PID
// namespace keeps each one, tagged with the hash of the spec it was
// started from, once the host is gone, for AdoptWindow after a crash and
// for the whole of an upgrade; the next host on the state dir adopts every
// one its last applied spec still has, and its start-up's apply then finds
// them running. One it does not have, or that runs another spec than it
// says, is stopped, or replaced by that apply.

// setHandover is where the init of the host's namespace waits for the
// next host (local.HandoverIn), kept for the host's upgrade. When no
// socket will do, there is none, and the plugins die with their host.
func (h *Host) setHandover() proc.Handover {
	hand, remove, err := local.HandoverIn(h.dir)
	if err != nil {
		h.log.Warn("no attach socket for the init of the host's namespace: plugins are not kept for the next host, and an upgrade restarts them", "err", err)
	}
	h.hand, h.removeHandover = hand, remove
	return hand
}

// closeHandover removes, once the host's init has ended, what was made
// for its attach socket elsewhere.
func (h *Host) closeHandover() {
	if h.removeHandover != nil {
		h.removeHandover()
	}
}

// adopt takes over the local processes an earlier host left with the init
// of its namespace, records the stops that init made with no host, and
// resumes the sessions it held with runners (resume.go). Called from
// open, before anything starts.
func (h *Host) adopt() {
	// The attach comes first: an init whose window just passed, still
	// stopping its plugins, has the connection wait until it ends, its
	// stops recorded by then.
	kept, err := h.local.Attach(h.log)
	if err != nil {
		h.log.Error("attach to the init an earlier host left: what it keeps is stopped when its window passes", "err", err)
	}
	h.recordHeldStops()
	if err := h.local.SocketsClaimed(); err != nil {
		h.log.Warn("take back the sockets the last program held", "err", err)
	}
	var applied *spec.Spec
	if h.spec != nil {
		applied = h.spec.parsed
	}
	now := time.Now()
	terms := h.takeTerms()
	for _, k := range kept {
		var p *spec.Plugin
		if applied != nil {
			p = applied.Plugins[k.Name]
		}
		if p == nil || (p.Run != spec.Local && p.Run != spec.Floating) || h.plugins[k.Name] != nil {
			h.log.Warn("a process an earlier host left is not a local or floating plugin of the last applied spec: stopped", "plugin", k.Name, "pid", k.Process.Pid)
			local.StopHeld(k.Held)
			continue
		}
		if err := h.adoptOne(applied, p, k, terms[p.Name], now); err != nil {
			h.log.Error("adopt a process an earlier host left: stopped", "plugin", k.Name, "pid", k.Process.Pid, "err", err)
		}
	}
	if applied != nil {
		h.resumeRunners(applied, now)
	}
}

// hostTag is what the host tags a local process with (runtime.Request.Tag)
// for the next host: the hash of the spec it was started from, and what
// the host added to its environment (the addresses and epochs of the
// floating plugins it uses), which its consumers' restarts compare with.
type hostTag struct {
	Hash string            `json:"hash"`
	Env  map[string]string `json:"env,omitempty"`
}

func (t hostTag) encode() string {
	b, _ := json.Marshal(t)
	return string(b)
}

// adoptOne adopts k, a process of plugin p of the last applied spec: a
// local plugin's, or the process of a floating plugin this host led,
// whose term t it takes back. A process it cannot adopt is stopped.
func (h *Host) adoptOne(applied *spec.Spec, p *spec.Plugin, k local.Kept, t *floating.Term, now time.Time) error {
	var tag hostTag
	if err := json.Unmarshal([]byte(k.Tag), &tag); err != nil {
		local.StopHeld(k.Held)
		return fmt.Errorf("its tag %q: %w", k.Tag, err)
	}
	out, err := h.logOf(p.Name)
	if err != nil {
		local.StopHeld(k.Held)
		return err
	}
	out.Continue() // its writer goes on: no line of its is ended here
	e := &entry{record: plan.Applied(applied, p.Name), env: tag.Env, from: applied}
	if tag.Hash != e.record.Hash {
		// Started from another spec than the last applied (a host that
		// died in an apply): the start-up's apply replaces it.
		e.record.Hash = tag.Hash
	}
	req := runtime.Request{Project: applied.Name, Dir: applied.Dir, Output: out, Log: h.log, Tag: k.Tag, Env: tag.Env}.For(p)
	var handle runtime.Handle
	switch {
	case p.Run == spec.Local:
		e.placement = h.local
		if handle, err = h.local.Adopt(context.Background(), req, k); err != nil {
			local.StopHeld(k.Held)
			return err
		}
	case t == nil || t.Epoch != k.Identity.Generation:
		local.StopHeld(k.Held)
		return fmt.Errorf("no term of epoch %d recorded for it: it ran under a term that may have ended", k.Identity.Generation)
	default:
		e.placement = h.floating
		inner, err := h.local.Adopt(context.Background(), h.floating.InnerRequest(req, t.Epoch), k)
		if err != nil {
			local.StopHeld(k.Held)
			return err
		}
		if handle, err = h.floating.Adopt(context.Background(), req, *t, inner, k.Since); err != nil {
			inner.Stop(runtime.Forced) // the term is not this host's: at once
			return err
		}
	}
	h.keepAdopted(p.Name, e, req, handle, k.Since, k.HostGone, now)
	h.log.Info("adopted a process an earlier host left", "plugin", p.Name, "pid", k.Process.Pid,
		"instance", k.Identity.ID, "generation", k.Identity.Generation, "unwatched", now.Sub(k.HostGone))
	return nil
}

// keepAdopted makes e the entry of plugin name, its supervisor running
// handle, a process an earlier host started as req asks at since, and
// adopted now, that host gone since gone.
func (h *Host) keepAdopted(name string, e *entry, req runtime.Request, handle runtime.Handle, since, gone, now time.Time) {
	e.supervisor = runtime.NewSupervisor(e.placement, req)
	e.supervisor.OnChange(h.changed.notify)
	e.supervisor.Adopt(handle, since)
	e.adopted = &hostapi.Adopted{At: now, HostGone: gone, GapMillis: now.Sub(gone).Milliseconds()}
	h.mu.Lock()
	h.plugins[name] = e
	h.mu.Unlock()
}

// recordTerms writes the terms this host leads (terms.json) for the
// program an upgrade executes, which takes them back (adoptOne).
func (h *Host) recordTerms() error {
	if h.floating == nil {
		return nil
	}
	terms := h.floating.Terms()
	for i := range terms {
		terms[i].Recorded = time.Now()
	}
	b, err := json.Marshal(terms)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(h.dir, statedir.Terms), append(b, '\n'), 0o600)
}

// takeTerms reads and removes the terms an upgraded host left: a host
// that crashed later must not take them for its own.
func (h *Host) takeTerms() map[string]*floating.Term {
	path := filepath.Join(h.dir, statedir.Terms)
	b, err := safefs.ReadFile(path, 16<<20)
	if err != nil {
		return nil
	}
	os.Remove(path)
	var terms []floating.Term
	if err := json.Unmarshal(b, &terms); err != nil {
		h.log.Error("read the terms an earlier program led", "path", path, "err", err)
		return nil
	}
	out := map[string]*floating.Term{}
	for i := range terms {
		out[terms[i].Plugin] = &terms[i]
	}
	return out
}

// recordHeldStops reads what the init of an earlier host's namespace
// stopped with no host (init.log): each is its plugin's last stop, in its
// status and the host's log. The record is then emptied.
func (h *Host) recordHeldStops() {
	path := filepath.Join(h.dir, statedir.InitLog)
	b, err := safefs.ReadFile(path, 16<<20)
	if err != nil || len(b) == 0 {
		return
	}
	for _, s := range proc.ParseHeldStops(b) {
		name := local.KeptName(s.Tag)
		if name == "" {
			continue
		}
		outcome := runtime.Exited
		if s.Outcome == "killed" {
			outcome = runtime.Killed
		}
		h.lastStops[name] = &hostapi.LastStop{Outcome: string(outcome), At: s.At, TookMillis: s.At.Sub(s.HostGone).Milliseconds(),
			Causes: []hostapi.StopCause{{Message: "stopped by the init of the host's namespace, no host having come within the adoption window: " + s.Status}}}
		h.log.Warn("a plugin was stopped with no host to adopt it", "plugin", name, "outcome", outcome, "hostGone", s.HostGone, "status", s.Status)
	}
	f, err := safefs.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		h.log.Error("empty the record of the stops made with no host", "err", err)
	}
}
