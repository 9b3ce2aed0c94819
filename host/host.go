// Package host is the daemon that owns one project's plugins: it keeps
// their desired spec and running state, carries out applies one at a
// time; its HTTP API is host/server's, which calls its methods.
package host

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/host/remotes"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/contentdigest"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/output"
	"github.com/graftland/graft/internal/planner"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/floating"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/worker"
	"github.com/graftland/graft/spec"
)

// Options configures a Host.
type Options struct {
	// Version is the host's graft version, reported in the status and in
	// the headers of its answers; default: skew.Version(), graft's.
	Version string
	// Timing is the local placement's stop windows; zero: the fixed ones of
	// docs/semantics.md, "Windows and defaults".
	Timing runtime.Timing
	// Logger receives the host's own log; nil: slog's default.
	Logger *slog.Logger
	// Limits bound the connections of the embedded runner's listener;
	// zero: the defaults. (The host's own listeners are its server's:
	// host/server.)
	Limits guard.Limits
	// HostID names the host in elections; default: the hostname and an id
	// kept in the state dir, so two hosts of one machine differ.
	HostID string
	// Clock is the elections' clock; nil is real time.
	Clock elect.Clock
	// NoNamespace runs local plugins outside a PID namespace, even where
	// they can have one (see docs/stopping.md).
	NoNamespace bool
	// AdoptWindow is how long the init of the host's namespace keeps its
	// local plugins for the next host after a crash (docs/upgrade.md); 0
	// keeps none: they die with the host.
	AdoptWindow time.Duration
	// Exec, when set, executes the program at the path it is given in
	// place of this one, with this one's arguments (graft upgrade,
	// upgrade.go); it returns only if it could not.
	Exec func(binary string) error
}

// Host owns the plugins of one state dir. Open it, Run it, and it stops
// every plugin in order when Run returns.
type Host struct {
	dir     string
	opt     Options
	log     *slog.Logger
	lock    *os.File
	reaper  *proc.Reaper
	local   *local.Local
	workers *worker.Worker
	// floating runs floating plugins on local while this host leads;
	// followLeaders takes its changes of leader until followed is closed.
	floating *floating.Placement
	followed chan struct{}
	runners  *remotes.Registry // runner plugins' placements
	hostID   string
	// removeHandover removes what was made for its init's attach socket
	// elsewhere (local.HandoverIn).
	removeHandover func()
	hand           proc.Handover        // where that init waits for the next host (adopt.go)
	planner        *planner.Host        // the host's plans, and the digest key they are made under
	digests        *contentdigest.Cache // digests of the files specs name (digests/)

	background tasks // restarts of consumers when a leader moves
	started    time.Time

	mu      sync.Mutex
	plugins map[string]*entry
	logs    map[string]*output.Log // by plugin; kept across its restarts
	spec    *applied               // the last applied spec; nil before the first apply
	specErr error                  // a *KeptSpecError: the last applied spec cannot be read
	// lastStops is how each plugin's last stop ended, for its status.
	lastStops map[string]*hostapi.LastStop
	// epochs is the epoch of each floating plugin's leader, as last seen.
	epochs map[string]int64

	metrics *metrics

	// completed keeps completed.json: the one-shots that completed, which
	// a host started again does not run again (completed.go).
	completed completions

	applying chan struct{} // a token: held by the apply under way
	holder   holder        // who holds it, while one does
	freed    chan struct{} // closed when the apply under way lets it go

	down     chan struct{} // closed when graft down asks the host to end
	downOnce sync.Once

	changed changes // tells watchers of the status that it changed
}

// holder is who holds the apply lock.
type holder struct {
	who   string
	since time.Time
	// preempted, for an apply that graft down may preempt, is cancelled
	// with its cause when one does (preempt.go); nil for the others.
	preempted context.Context
	preempt   context.CancelCauseFunc
}

// Open takes the state dir dir for a new host: it makes the directory,
// checks that it and its subdirectories can be trusted (a *safefs.UnsafeError
// names what cannot, and the fix), takes its lock (failing with a
// *dirlock.HeldError if another host holds it), refuses a dir a newer
// graft wrote (a *statedir.NewerError), and makes this process a child
// subreaper, so that nothing a plugin forks escapes. Open writes nothing
// that is already there: a host starts on a full disk.
func Open(dir string, opt Options) (*Host, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := validateStateDir(dir); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	reaper, err := proc.StartReaper()
	if err != nil {
		lock.Close()
		return nil, err
	}
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	if opt.Version == "" {
		opt.Version = skew.Version()
	}
	h := &Host{
		dir:       dir,
		opt:       opt,
		log:       log,
		lock:      lock,
		reaper:    reaper,
		started:   time.Now(),
		plugins:   map[string]*entry{},
		logs:      map[string]*output.Log{},
		lastStops: map[string]*hostapi.LastStop{},
		epochs:    map[string]int64{},
		applying:  make(chan struct{}, 1),
		down:      make(chan struct{}),
	}
	h.metrics = newMetrics(h)
	if err := h.open(); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// open checks the state dir's stamp (a dir a newer graft wrote is
// refused), reads what it keeps (the digest key, the last applied spec,
// the host id), makes the placements, and clears what a host that died
// left behind. The lock is held.
func (h *Host) open() error {
	if err := statedir.Stamp(h.dir, statedir.Format{Format: statedir.HostFormat, Version: h.opt.Version}, h.log); err != nil {
		return err
	}
	var err error
	if h.planner, err = planner.OpenHost(h.dir); err != nil {
		return err
	}
	// A last applied spec that cannot be read does not keep the host from
	// starting: it runs nothing, graft status answers, and graft down
	// removes the file.
	h.digests = contentdigest.New(filepath.Join(h.dir, digestsDir))
	h.spec, h.specErr = loadApplied(h.dir, h.digests)
	if h.spec != nil {
		h.spec.parsed = h.planner.Keyed(h.spec.parsed)
	}
	h.restoreCompleted()
	if h.hostID = h.opt.HostID; h.hostID == "" {
		if h.hostID, err = defaultHostID(h.dir); err != nil {
			return err
		}
	}
	if err := h.openPlacements(); err != nil {
		return err
	}
	h.adopt() // before anything starts: its init's namespace becomes the host's
	if err := h.cleanCache(); err != nil {
		return err
	}
	local.StopLeftovers(filepath.Join(h.dir, instancesDir), "host", h.log)
	h.local.LogIsolation(h.log, "the host")
	return nil
}

// Dir is the host's state dir.
func (h *Host) Dir() string { return h.dir }

// Version is the host's graft version (Options.Version).
func (h *Host) Version() string { return h.opt.Version }

// Log is the host's log.
func (h *Host) Log() *slog.Logger { return h.log }

// Ending is closed once graft down has stopped every plugin and asks the
// host to end: its server stops serving.
func (h *Host) Ending() <-chan struct{} { return h.down }

// close releases what Open took.
func (h *Host) close() {
	h.closePlacements()
	h.mu.Lock()
	for _, l := range h.logs {
		l.Close()
	}
	h.mu.Unlock()
	h.closeHandover()
	h.reaper.Stop()
	h.lock.Close()
}

// Reapply brings about the last applied spec, as a host does when it
// starts: a host restarted by systemd, or after a crash, brings its
// plugins back.
func (h *Host) Reapply(ctx context.Context) error { return h.BeginReapply()(ctx) }

// BeginReapply takes the apply lock for Reapply now, so that no apply
// gets ahead of it (those that come meanwhile wait for it), and returns
// the apply to run, which releases the lock when it ends. A host calls it
// before it listens. Running it with a ctx already ended applies nothing
// and only releases the lock: a host that failed to start.
func (h *Host) BeginReapply() func(ctx context.Context) error {
	h.mu.Lock()
	a, aerr := h.spec, h.specErr
	h.mu.Unlock()
	if a == nil {
		return func(context.Context) error { return aerr }
	}
	req := ApplyRequest{Source: a.Source, Holder: startupHolder}
	locked := h.lockApply(context.Background(), req, true) == nil
	return func(ctx context.Context) error {
		if !locked {
			if err := h.lockApply(ctx, req, true); err != nil {
				return err
			}
		}
		defer h.unlockApply()
		if err := ctx.Err(); err != nil {
			return err
		}
		h.log.Info("applying the last applied spec", "file", a.Source.File, "applied", a.At)
		desired, err := h.desired(req.Source) // the kept spec, parsed as it was read
		if err != nil {
			return err
		}
		_, err = h.applyLocked(ctx, req, desired, Report{}, true)
		return err
	}
}

// startupHolder holds the apply lock while a host brings back its last
// applied spec; applies that find it wait.
const startupHolder = "the host's start-up"

// StopAll stops every plugin in order, consumers first, as an apply of an
// empty spec, and keeps the last applied spec: the host's own shutdown.
func (h *Host) StopAll(ctx context.Context) error {
	h.freezeCompleted() // they stop with the host; they have not left the spec
	_, err := h.apply(ctx, ApplyRequest{Holder: "the host's shutdown"}, Report{}, false)
	return err
}

// Restart replaces req.Restart's plugins of the last applied spec, and
// restarts their consumers, planned as any apply.
func (h *Host) Restart(ctx context.Context, req ApplyRequest, report Report) error {
	h.mu.Lock()
	a, aerr := h.spec, h.specErr
	h.mu.Unlock()
	if aerr != nil {
		return aerr
	}
	if a == nil {
		return &hostapi.NothingAppliedError{}
	}
	if s := a.parsed; s != nil {
		for _, name := range req.Restart {
			named := s.Named(name)
			if len(named) == 0 {
				return &NotFoundError{What: fmt.Sprintf("restart %s: no such plugin in %s", name, a.Source.File)}
			}
			if req.Once && !s.Plugins[named[0]].Once.On {
				return &NotFoundError{What: fmt.Sprintf("run %s: no one-shot (once: true) of that name in %s; graft restart replaces a plugin that keeps running", name, a.Source.File)}
			}
		}
	}
	req.Source, req.Plan = a.Source, nil
	_, err := h.Apply(ctx, req, report)
	return err
}

// Down stops every plugin, consumers first, whatever becomes of ctx, then
// forgets the applied spec and the completed one-shots, and ends the host
// (Serve returns). The next apply is a fresh deploy. An apply under way
// is preempted: it begins no further step and stops waiting for its
// plugins; Down takes the lock once that apply's steps under way have
// ended, waiting as long as ctx lasts (docs/semantics.md, "graft down").
func (h *Host) Down(ctx context.Context, req ApplyRequest, report Report) error {
	desired, err := h.desired(spec.Source{})
	if err != nil {
		return err
	}
	h.preemptApply(&PreemptedError{By: req.Holder})
	if err := h.lockApply(ctx, ApplyRequest{Holder: req.Holder, LockWait: forever}, false); err != nil {
		return err
	}
	defer h.unlockApply()
	h.freezeCompleted()
	_, err = h.applyLocked(context.WithoutCancel(ctx), ApplyRequest{Holder: req.Holder, Parallelism: req.Parallelism}, desired, report, false)
	if err == nil {
		err = h.forgetApplied()
	}
	if err == nil {
		err = h.forgetCompleted()
	}
	if err == nil {
		h.pruneDigests() // nothing applied: every table goes (the lock is held)
	}
	h.downOnce.Do(func() { close(h.down) })
	return err
}

// Shutdown stops every plugin in order and releases the state dir. Work
// under way in the background is cancelled first, and no more begins.
func (h *Host) Shutdown(ctx context.Context) error {
	h.background.Close()
	err := h.StopAll(ctx)
	h.close()
	return err
}

// tasks counts a host's background work, and refuses more once closed.
type tasks struct {
	mu     sync.Mutex
	closed bool
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Go runs f in the background, unless closed. f's context is cancelled
// when the host shuts down.
func (t *tasks) Go(f func(ctx context.Context)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if t.ctx == nil {
		t.ctx, t.cancel = context.WithCancel(context.Background())
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f(t.ctx)
	}()
}

// Close refuses more tasks, cancels those under way and waits for them.
func (t *tasks) Close() {
	t.mu.Lock()
	t.closed = true
	if t.cancel != nil {
		t.cancel()
	}
	t.mu.Unlock()
	t.wg.Wait()
}
