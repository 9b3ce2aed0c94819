package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
)

// A runner replaces its program in its own process without touching its
// processes (docs/upgrade.md): graft runner does on SIGHUP, and a host
// does for the runner embedded in it when it upgrades. Handover readies
// it: the starts and stops under way end first, and new ones wait; the
// init of its namespace is told to keep every process for the next
// program; the copying of their output stops once what was read is sent;
// and the sessions, with what is left of each lease and the processes
// under each, are written to handover.json. The next program, opening the
// state dir, attaches to the init and takes the processes back under
// their sessions (takeHandover), where the journal, still the one source
// of truth, has their records: the same pid, instance and generation, and
// the leases run on. What the file or the journal does not name is
// stopped, as after a crash.

// handoverFile is the file of a handover, in the state dir.
const handoverFile = statedir.Handover

// maxHandoverFile bounds what is read of it.
const maxHandoverFile = 64 << 20

// handover is what handover.json holds.
type handover struct {
	// Version is the graft that wrote it.
	Version string `json:"version"`
	// Written is when it was written: each lease left is counted from it.
	Written  time.Time       `json:"written"`
	Sessions []handedSession `json:"sessions"`
}

// handedSession is a session the next program takes back.
type handedSession struct {
	ID          string `json:"id"`
	Holder      string `json:"holder"`
	LeaseMillis int64  `json:"leaseMillis"`
	// LeftMillis is what was left of its lease when the file was written.
	LeftMillis int64           `json:"leftMillis"`
	Processes  []handedProcess `json:"processes"`
}

// handedProcess is a process of a handed session.
type handedProcess struct {
	Instance   string    `json:"instance"`
	Generation int64     `json:"generation"`
	Invocation string    `json:"invocation"`
	PID        int       `json:"pid"`
	StartedAt  time.Time `json:"startedAt"`
	// Start is the request it was started by, with the changes of its
	// reloads and health requests since.
	Start runnerapi.Start `json:"start"`
}

// handWait bounds the wait of a handover for the starts and stops under
// way, and drainWait its wait for the event streams to send what they
// queue.
const (
	handWait  = 30 * time.Second
	drainWait = time.Second
)

// ErrNoHandover is why a runner cannot hand its processes to its next
// program: they run outside a PID namespace whose init can outlive it.
var ErrNoHandover = errors.New("the runner's processes run outside a PID namespace whose init can outlive it")

// Handover readies the runner for its next program, to be executed in
// its process at once, and returns the function that undoes it when that
// exec fails: the runner then goes on as before. The init keeps the
// processes window long for the next program to attach.
func (r *Runner) Handover(window time.Duration) (undo func(), err error) {
	if r.hand.Socket == "" || !r.local.Isolation().Namespace {
		if err := r.local.Isolation().Err; err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoHandover, err)
		}
		return nil, ErrNoHandover
	}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return nil, errClosing
	case r.handing != nil:
		r.mu.Unlock()
		return nil, errors.New("a handover is under way already")
	}
	r.handing = make(chan struct{})
	r.mu.Unlock()
	steps := []func(){r.reopen}
	undo = func() {
		for i := len(steps) - 1; i >= 0; i-- {
			steps[i]()
		}
	}
	if err := r.settle(handWait); err != nil {
		undo()
		return nil, err
	}
	if err := r.local.Hold(window); err != nil {
		undo()
		return nil, err
	}
	steps = append(steps, func() { r.local.Unhold(0) })
	r.local.Freeze()
	steps = append(steps, r.local.Thaw)
	undoSockets, err := r.local.HandSockets()
	if err != nil {
		undo()
		return nil, fmt.Errorf("hand the held sockets over: %w", err)
	}
	steps = append(steps, undoSockets)
	r.drain(drainWait)
	h := r.handed()
	b, _ := json.Marshal(h) // plain fields: always marshals
	path := filepath.Join(r.dir, handoverFile)
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		undo()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	steps = append(steps, func() { os.Remove(path) })
	n := 0
	for _, s := range h.Sessions {
		n += len(s.Processes)
	}
	r.log.Info("handing over to the next program", "sessions", len(h.Sessions), "processes", n)
	return undo, nil
}

// settle waits until no request that changes a process or a session is
// under way and no process is being stopped or recovered, within wait.
// New requests wait meanwhile (enter).
func (r *Runner) settle(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		r.mu.Lock()
		busy := r.ops > 0 || len(r.starting) > 0
		for _, inst := range r.instances {
			// A start-first overlap ends first: a handover hands one
			// process an instance.
			busy = busy || inst.busy || inst.recovered != nil || inst.old != nil || inst.cur != nil && inst.cur.state != procRunning
		}
		r.mu.Unlock()
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a start or stop under way did not end within %s: try again", wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// drain waits, within wait, until the event streams connected have sent
// what they queue.
func (r *Runner) drain(wait time.Duration) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		drained := true
		for _, s := range r.sessions {
			drained = drained && s.drained()
		}
		r.mu.Unlock()
		if drained {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// handed is the runner's sessions and their processes, for the file.
func (r *Runner) handed() handover {
	now := time.Now()
	h := handover{Version: r.opt.Version, Written: now}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		hs := handedSession{ID: s.id, Holder: s.holder, LeaseMillis: s.lease.Milliseconds(), LeftMillis: s.expires.Sub(now).Milliseconds()}
		for p := range s.procs {
			if p.state != procRunning {
				continue
			}
			hs.Processes = append(hs.Processes, handedProcess{Instance: p.name, Generation: p.gen, Invocation: p.inv,
				PID: p.pid, StartedAt: p.startedAt, Start: p.start})
		}
		h.Sessions = append(h.Sessions, hs)
	}
	return h
}

// reopen ends a handover that did not go on: the requests waiting go on,
// and the leases that ran out meanwhile end.
func (r *Runner) reopen() {
	r.mu.Lock()
	close(r.handing)
	r.handing = nil
	for _, s := range r.sessions {
		s.timer.Reset(max(time.Until(s.expires), 0))
	}
	r.mu.Unlock()
	r.log.Info("the handover did not go on: the runner goes on")
}

// enter lets a request that changes a process or a session through, once
// no handover is under way; leave ends it. A request that comes during a
// handover waits: the next program answers it on a new connection, or
// this one, if the handover does not go on.
func (r *Runner) enter() {
	r.mu.Lock()
	for r.handing != nil {
		wait := r.handing
		r.mu.Unlock()
		<-wait
		r.mu.Lock()
	}
	r.ops++
	r.mu.Unlock()
}

func (r *Runner) leave() {
	r.mu.Lock()
	r.ops--
	r.mu.Unlock()
}

// takeHandover takes back the processes that the runner's last program
// handed over, under their sessions, and returns the invocation ids of
// those it took: their records are not recovered. The init's processes
// that the file, or the journal's records recs, do not name are stopped
// (killed at once, as after a crash). Called from Open, before the first
// start.
func (r *Runner) takeHandover(recs []record) map[string]bool {
	path := filepath.Join(r.dir, handoverFile)
	var h handover
	b, err := safefs.ReadFile(path, maxHandoverFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		r.log.Error("read the handover of the runner's last program: its processes are stopped", "path", path, "err", err)
	default:
		if err := json.Unmarshal(b, &h); err != nil {
			r.log.Error("read the handover of the runner's last program: its processes are stopped", "path", path, "err", err)
		}
	}
	os.Remove(path) // read once: a program that fails later on finds none
	kept, err := r.local.Attach(r.log)
	if err != nil {
		r.log.Error("attach to the init the runner's last program left: what it keeps is stopped when its window passes", "err", err)
	}
	byInv := map[string]local.Kept{}
	for _, k := range kept {
		byInv[k.Tag] = k
	}
	live := map[string]record{}
	for _, rec := range recs {
		if !rec.salvaged {
			live[rec.Invocation] = rec
		}
	}
	taken := map[string]bool{}
	now := time.Now()
	for _, hs := range h.Sessions {
		s := r.restoreSession(hs, now.Sub(h.Written))
		for _, hp := range hs.Processes {
			k, ok := byInv[hp.Invocation]
			rec, known := live[hp.Invocation]
			if !ok || !known || rec.Instance != hp.Instance || rec.Generation != hp.Generation ||
				k.Identity != (runtime.Identity{ID: hp.Instance, Generation: hp.Generation}) {
				continue
			}
			delete(byInv, hp.Invocation)
			if err := r.takeProcess(s, hp, k); err != nil {
				r.log.Error("take back a process the last program handed over: stopped", "instance", hp.Instance, "generation", hp.Generation, "err", err)
				local.StopHeld(k.Held)
				continue
			}
			taken[hp.Invocation] = true
		}
	}
	for _, k := range byInv {
		r.log.Warn("a process the runner's last program left is not one it handed over: stopped", "instance", k.Identity.ID, "generation", k.Identity.Generation, "pid", k.Process.Pid)
		local.StopHeld(k.Held)
	}
	if len(h.Sessions) > 0 {
		r.log.Info("took over from the runner's last program", "version", h.Version, "sessions", len(h.Sessions), "processes", len(taken),
			"gap", now.Sub(h.Written).Round(time.Millisecond))
	}
	return taken
}

// restoreSession makes the session hs again, its lease running on with
// what was left of it once gone: the time since it was written. A lease
// that ran out meanwhile ends at once, its processes stopped.
func (r *Runner) restoreSession(hs handedSession, gone time.Duration) *session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{id: hs.ID, holder: hs.Holder, lease: time.Duration(hs.LeaseMillis) * time.Millisecond,
		procs: map[*process]bool{}, ctx: ctx, cancel: cancel}
	left := max(time.Duration(hs.LeftMillis)*time.Millisecond-gone, 0)
	r.mu.Lock()
	s.expires = time.Now().Add(left)
	s.timer = time.AfterFunc(left, func() { r.expire(s) })
	r.sessions[s.id] = s
	r.mu.Unlock()
	r.log.Info("session taken over", "session", s.id, "holder", s.holder, "lease", s.lease, "left", left)
	return s
}

// takeProcess makes k, which the last program handed over as hp, the
// process of its instance under s, and watches it as if it had started it.
func (r *Runner) takeProcess(s *session, hp handedProcess, k local.Kept) error {
	p := r.process(hp.Instance, hp.Generation, hp.Invocation, hp.Start, s)
	p.pid, p.startedAt = hp.PID, hp.StartedAt
	id := runtime.Identity{ID: hp.Instance, Generation: hp.Generation}
	h, err := r.local.Adopt(r.ctx, r.request(p, &id), k)
	if err != nil {
		return err
	}
	r.handle(p, h)
	r.mu.Lock()
	inst := r.instance(p.name)
	inst.cur = p
	p.to(procRunning)
	s.procs[p] = true
	r.wg.Add(2)
	go r.watch(p)
	go r.forwardHealth(p)
	r.mu.Unlock()
	r.log.Info("took back a process", "instance", p.name, "generation", p.gen, "pid", p.pid, "session", s.id)
	return nil
}

// process is a new process of instance name, generation gen, started by
// req under s, not yet spawned.
func (r *Runner) process(name string, gen int64, inv string, req runnerapi.Start, s *session) *process {
	p := &process{
		name:       name,
		gen:        gen,
		inv:        inv,
		session:    s,
		start:      req,
		stopSignal: proc.SignalNamed(req.StopSignal),
		stopMain:   req.StopMode == launch.StopMain,
		state:      procStarting,
		hurry:      make(chan struct{}),
		healthSet:  make(chan struct{}, 1),
		gaveUp:     make(chan struct{}),
		done:       make(chan struct{}),
	}
	p.out = newLineOutput(func(line string) {
		s.send(runnerapi.Event{Type: runnerapi.EventOutput, Instance: name, Generation: gen, Line: line})
	})
	return p
}

// request is the local placement's request for p, of identity id: tagged
// with its invocation id, so that the init of the namespace keeps it
// across a handover, and only then.
func (r *Runner) request(p *process, id *runtime.Identity) runtime.Request {
	l := p.start.Spec.WithDefaults()
	if l.ListenKey != "" && p.session != nil {
		// Replicas share their sockets with those of their holder alone:
		// another host's replicas of the same name are its own.
		l.ListenKey = p.session.holder + "/" + l.ListenKey
	}
	return runtime.Request{
		Name:        p.start.Plugin,
		Launch:      l,
		Project:     p.start.Project,
		Env:         map[string]string{EnvInvocation: p.inv},
		Output:      p.out,
		Identity:    id,
		Tag:         p.inv,
		UpgradeOnly: true,
	}
}

// handle makes h p's handle.
func (r *Runner) handle(p *process, h runtime.Handle) {
	p.h = h
	p.signal = func(syscall.Signal) error { return errors.New("cannot signal its family") }
	p.signalMain = p.signal
	if sg, ok := h.(signaller); ok {
		p.signal, p.signalMain = sg.Signal, sg.SignalMain
	}
}

// Preflight is what a new program checks of a runner's state dir before
// the runner executes it: that the dir can be trusted and is of a format
// the program keeps (a *statedir.NewerError when it is not).
func Preflight(dir, version string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := safefs.Root(dir, 0o700); err != nil {
		return err
	}
	return statedir.CheckStamp(dir, statedir.Format{Format: statedir.RunnerFormat, Version: version})
}
