package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
)

// A host hands its local processes to the next one through the init of
// its PID namespace (docs/upgrade.md): the init keeps every process started
// with a Request.Tag, and the read end of its output pipe, once the host
// is gone; the next host attaches to it (Attach) and makes each one's
// handle again (Adopt). A host that replaces itself (graft upgrade) first
// tells the init to hold them (Hold), and freezes its copying of their
// output and its reaping (Freeze), so that every byte it read is written
// and every exit left for the next host.

// keptTag is the init's tag of the process req starts, with identity id;
// empty when req has no Tag: the process is not kept.
func keptTag(req runtime.Request, id runtime.Identity) string {
	if req.Tag == "" {
		return ""
	}
	b, _ := json.Marshal(kept{Name: req.Name, Instance: id.ID, Generation: id.Generation, Tag: req.Tag, Since: time.Now().UnixMilli()})
	return string(b)
}

// Attach connects to the init of an earlier host's namespace, waiting at
// Options.Handover, and returns the processes it kept, which Adopt makes
// handles of: every one must be adopted, or stopped (StopHeld). A process
// whose tag cannot be read is stopped here. With no init waiting it
// returns none. Call it before the first Start.
func (l *Local) Attach(log *slog.Logger) ([]Kept, error) {
	if l.opt.NoNamespace || l.opt.Handover.Socket == "" {
		return nil, nil
	}
	held, err := l.spawner.Attach()
	var out []Kept
	for _, h := range held {
		var k kept
		if json.Unmarshal([]byte(h.Tag), &k) != nil || k.Name == "" {
			log.Warn("a process an earlier host left carries no tag this host reads; stopped", "pid", h.Process.Pid)
			StopHeld(h)
			continue
		}
		out = append(out, Kept{Held: h, Name: k.Name, Identity: runtime.Identity{ID: k.Instance, Generation: k.Generation}, Tag: k.Tag,
			Since: time.UnixMilli(k.Since)})
	}
	return out, err
}

// Adopt makes the handle of k, a process an earlier host started as req
// asks: it runs on as if this Local had started it and its ready check
// had passed; its health checks start again.
func (l *Local) Adopt(ctx context.Context, req runtime.Request, k Kept) (runtime.Handle, error) {
	if k.Output == nil {
		return nil, fmt.Errorf("adopt %s: it came without its output", req.Name)
	}
	if req.Output == nil {
		return nil, errors.New("local: adopt without an output")
	}
	cred, err := credential(req)
	if err != nil {
		return nil, err
	}
	env := environ(l.base, l.opt.Env, req, k.Identity, cred.env)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("local: placement closed")
	}
	p := l.track(req, k.Identity, k.Process, k.Output, env, cred)
	l.mu.Unlock()
	p.SetHealth(ctx, req.Launch.Health)
	return p, nil
}

// StopHeld stops a process an earlier host left that this one does not
// adopt (its plugin left the spec, or it carries no tag this host reads):
// its whole family, killed at once, then reaped.
func StopHeld(h proc.Held) {
	if h.Output != nil {
		defer h.Output.Close()
	}
	h.Process.SignalGroup(syscall.SIGKILL)
	if members, err := h.Process.Family(); err == nil {
		for _, m := range members {
			m.Signal(syscall.SIGKILL)
		}
	}
	h.Process.Reap()
}

// Hold tells the namespace's init to keep every process, not only those
// with a tag, window long once this host is gone: what an upgrade asks
// before it executes the new program.
func (l *Local) Hold(window time.Duration) error {
	if l.opt.NoNamespace {
		return ErrNoNamespace
	}
	if err := l.Isolation().Err; err != nil {
		return err
	}
	return l.spawner.Hold(window, true)
}

// Unhold undoes Hold: the init keeps what has a tag for window, after a
// crash, as before the upgrade that could not go on.
func (l *Local) Unhold(window time.Duration) {
	if l.opt.NoNamespace || l.Isolation().Err != nil {
		return
	}
	l.spawner.Hold(window, false)
}

// Freeze stops the copying of every process's output once what it read
// is written, and any reaping, until Thaw: what the processes write from
// then on waits in their pipes, and an exit for the next host, which
// this one is about to become.
func (l *Local) Freeze() {
	l.mu.Lock()
	l.frozen = true
	for p := range l.live {
		p.pipe.SetReadDeadline(time.Now())
	}
	l.mu.Unlock()
	l.gate.Lock()
}

// Thaw undoes Freeze: an upgrade that could not execute the new program
// goes on with this one.
func (l *Local) Thaw() {
	l.mu.Lock()
	l.frozen = false
	for p := range l.live {
		p.pipe.SetReadDeadline(time.Time{})
	}
	l.mu.Unlock()
	l.gate.Unlock()
}
