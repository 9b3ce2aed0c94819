package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/runtime"
)

// Local is the placement of plugins that run as child processes of the
// host. It forks them all from one thread it keeps (see proc.Spawner),
// in a PID namespace of the host's own where the system allows it (see
// Isolation), so that nothing of a plugin outlives the host.
type Local struct {
	opt     Options
	spawner *proc.Spawner
	base    []string // runtime.BaseEnv of opt.Env, for every start

	mu     sync.Mutex
	live   map[*process]bool
	closed bool
	// gate is held, shared, by each read and write of an output pipe and
	// each reaping; Freeze holds it alone (handover_linux.go).
	gate   sync.RWMutex
	frozen bool // under mu

	sockets  socketTable // the sockets held for the plugins (sockets.go)
	claimErr error       // why the sockets handed over were not all taken back
}

var _ runtime.Placement = (*Local)(nil)

// New returns a Local placement.
func New(opt Options) *Local {
	opt = opt.withDefaults()
	s := proc.NewSpawner()
	if opt.Handover.Socket != "" {
		s.SetHandover(opt.Handover, opt.AdoptWindow)
	}
	l := &Local{opt: opt, spawner: s, base: runtime.BaseEnv(opt.Env), live: map[*process]bool{}}
	l.claimErr = l.claimSockets()
	return l
}

// Isolation says whether plugins run in a PID namespace of the host's
// own, so that nothing of theirs outlives the host, and why not.
func (l *Local) Isolation() proc.Isolation {
	if l.opt.NoNamespace {
		return proc.Isolation{Err: ErrNoNamespace}
	}
	return l.spawner.Isolation()
}

// start is Start, with the start recorded if it is to be.
func (l *Local) start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	if req.Output == nil {
		return nil, errors.New("local: start without an output")
	}
	id := runtime.Identity{ID: uuid.NewString(), Generation: 1}
	if req.Identity != nil {
		id = *req.Identity
	}
	cred, err := credential(req)
	if err != nil {
		return nil, err
	}
	env := environ(l.base, l.opt.Env, req, id, cred.env)
	socks, err := l.sockets.hold(SocketKey(req), resolved(req, req.Launch.Listen))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", req.Name, err)
	}
	env = withListen(env, socks)
	var seen <-chan struct{}
	req.Output, seen = ready.Watch(req.Launch.Ready, req.Output)
	output := proc.OutputPipe
	if req.Launch.TTY {
		output = proc.OutputTTY // docs/semantics.md, "A terminal for the output"
	}
	r, w, err := output()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		r.Close()
		w.Close()
		return nil, errors.New("local: placement closed")
	}
	pp, err := l.spawner.Start(cred.cmd(proc.Cmd{
		Argv:    req.Launch.Command,
		Dir:     workDir(req),
		Env:     env,
		Output:  w,
		Marker:  marker(req, id),
		Isolate: !l.opt.NoNamespace,
		// What the namespace's init keeps for the next host
		// (handover_linux.go).
		Reader:      r,
		Tag:         keptTag(req, id),
		Hold:        req.Tag != "" && !req.UpgradeOnly,
		StopSignal:  proc.SignalNamed(req.Launch.StopSignal),
		StopTimeout: l.opt.Timing.ShutdownTimeout + l.opt.Timing.ExitWindow,
		Files:       filesOf(socks),
	}))
	w.Close() // the child holds its copy
	if err != nil {
		l.mu.Unlock()
		r.Close()
		return nil, fmt.Errorf("start %s: %w", req.Name, err)
	}
	p := l.track(req, id, pp, r, env, cred)
	l.mu.Unlock()
	if l.opt.Started != nil {
		l.opt.Started(p)
	}
	if req.Started != nil {
		req.Started(p)
	}

	if req.Launch.Ready != nil {
		if err := l.awaitReady(ctx, req, p, pp, seen); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		p.Stop(runtime.Forced)
		return nil, ctx.Err()
	}
	p.SetHealth(ctx, req.Launch.Health)
	return p, nil
}

// track makes the handle of pp, with its output pipe's read end r, and
// counts it live. Called with l.mu held.
func (l *Local) track(req runtime.Request, id runtime.Identity, pp *proc.Process, r *os.File, env []string, cred *cred) *process {
	if l.frozen {
		r.SetReadDeadline(time.Now()) // its copy waits at the gate
	}
	p := newProcess(req, id, pp, r, l.opt.Timing, l.forget, &l.gate)
	p.probe = func(ctx context.Context, argv []string) error {
		return l.probe(ctx, argv, workDir(req), env, cred)
	}
	l.live[p] = true
	return p
}

// awaitReady waits for the ready check of p, the process pp, to pass.
// When it cannot, p is stopped (forced if ctx ended) and the error is the
// start's: a *runtime.StartError with p's exit, or ctx's.
func (l *Local) awaitReady(ctx context.Context, req runtime.Request, p *process, pp *proc.Process, seen <-chan struct{}) error {
	err := ready.Wait(ctx, req.Launch.Ready, p.probe, pp.Exited(), seen)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ready.ErrGone):
		<-p.done
		return &runtime.StartError{Plugin: req.Name, Reason: err.Error(), Exit: p.exit}
	case ctx.Err() != nil:
		p.Stop(runtime.Forced)
		return ctx.Err()
	default:
		p.Stop(context.Background())
		return &runtime.StartError{Plugin: req.Name, Reason: err.Error(), Exit: p.exit}
	}
}

// forget drops a reaped process from the live ones.
func (l *Local) forget(p *process) {
	l.mu.Lock()
	delete(l.live, p)
	l.mu.Unlock()
}

// probe runs a ready command as the plugin runs (in its directory and
// environment, as its user, with its umask and limits), and kills it
// with its group if ctx ends first.
func (l *Local) probe(ctx context.Context, argv []string, dir string, env []string, cred *cred) error {
	r, w, err := proc.OutputPipe()
	if err != nil {
		return err
	}
	defer r.Close()
	pp, err := l.spawner.Start(cred.cmd(proc.Cmd{Argv: argv, Dir: dir, Env: env, Output: w}))
	w.Close()
	if err != nil {
		return err
	}
	out := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 4096))
		out <- b
	}()
	select {
	case <-pp.Exited():
	case <-ctx.Done():
	}
	// Whatever the probe left behind in its group goes with it; the group
	// id is safe to use until the probe is reaped.
	pp.SignalGroup(syscall.SIGKILL)
	st, err := pp.Reap()
	r.Close()
	b := <-out
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if st.Code != 0 || st.Signal != 0 {
		if out := trimOutput(b); out != "" {
			return fmt.Errorf("%s: %s: %s", argv[0], describeStatus(st), out)
		}
		return fmt.Errorf("%s: %s, with no output", argv[0], describeStatus(st))
	}
	return nil
}

// Close stops every plugin still running, as Stop does, then ends the
// spawner's thread.
func (l *Local) Close() error {
	l.mu.Lock()
	l.closed = true
	var live []*process
	for p := range l.live {
		select {
		case <-p.stop: // its stop is under way, and its result its caller's
		default:
			live = append(live, p)
		}
	}
	l.mu.Unlock()
	err := runtime.StopAll(context.Background(), live)
	l.spawner.Close()
	l.sockets.closeAll()
	return err
}
