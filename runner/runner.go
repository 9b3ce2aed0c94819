// Package runner is graft's runner: it runs plugin processes for hosts,
// under leases the hosts renew, gives each start of an instance a
// generation kept on disk, and serves the HTTP API of docs/runner-api.md.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/internal/dirlock"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
)

// The defaults of Options (docs/semantics.md, "Windows and defaults").
const (
	DefaultLease = runnerapi.DefaultLease
	DefaultGrace = 5 * time.Second
)

// Options configures a Runner.
type Options struct {
	// Lease is a session's lease when its holder asks for none: 15
	// seconds when zero.
	Lease time.Duration
	// Grace is the time from interrupting a process (SIGTERM) to killing
	// it (SIGKILL): 5 seconds when zero.
	Grace time.Duration
	// Token, when set, must come with every request as "Authorization:
	// Bearer TOKEN".
	Token string
	// Logger receives the runner's log; nil: slog's default.
	Logger *slog.Logger
	// Version is the runner's graft version, in sessions, the status and
	// the headers of its answers; default: skew.Version(), graft's.
	Version string
	// Limits bound the time to read a request's body (and, for a server
	// made with guard.Server, its connections); zero: the defaults.
	Limits guard.Limits
	// NoNamespace runs processes outside a PID namespace, even where they
	// can have one (see docs/stopping.md).
	NoNamespace bool
}

// Runner runs the processes of its sessions, one state dir's worth.
//
// It does not own the process it lives in: it handles no signal and does
// not make the process a child subreaper. A program that runs only a
// runner (graft runner) does both, so that nothing a plugin forks escapes
// and no orphan stays a zombie; the host, which embeds one, already has.
type Runner struct {
	dir   string
	opt   Options
	log   *slog.Logger
	lock  *os.File
	state *state
	local *local.Local
	// hand is where the init of its namespace waits for its next program
	// (Handover); removeHandover removes what was made for it elsewhere.
	hand           proc.Handover
	removeHandover func()
	bootID         string
	since          time.Time

	// ctx ends when Close begins: starts under way stop, streams end.
	ctx    context.Context
	cancel context.CancelFunc
	// quit is closed once Close has stopped what it could: watchers of
	// processes whose exit was never confirmed give up.
	quit chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	sessions  map[string]*session
	instances map[string]*instance
	starting  map[runtime.Identity]*process // spawned, not yet answered
	// ops counts the requests under way that change a process or a
	// session; handing is set while a handover is under way, and closed
	// when it did not go on (handover.go).
	ops     int
	handing chan struct{}

	metrics *metrics
}

// instance is the runner's state of one instance name. mu guards it.
type instance struct {
	name string
	// busy is set while a start or stop request works on the instance.
	busy bool
	// cur is its process, from its start's answer until its exit is
	// confirmed.
	cur *process
	// old is the process a start-first start (runnerapi.Start.Overlap)
	// left running beside cur, until its exit is confirmed.
	old *process
	// recovered is a process a previous runner recorded that may still
	// live, until it is confirmed gone.
	recovered *record
	// exits are its last processes' exits, for stops that come late.
	exits []ended
}

// ended is a process of an instance that is gone, and how.
type ended struct {
	gen  int64
	exit runtime.Exit
}

// keptExits bounds the exits remembered per instance.
const keptExits = 4

func (inst *instance) remember(gen int64, exit runtime.Exit) {
	inst.exits = append(inst.exits, ended{gen, exit})
	if len(inst.exits) > keptExits {
		inst.exits = inst.exits[len(inst.exits)-keptExits:]
	}
}

func (inst *instance) exitOf(gen int64) (runtime.Exit, bool) {
	for _, e := range inst.exits {
		if e.gen == gen {
			return e.exit, true
		}
	}
	return runtime.Exit{}, false
}

// killWait bounds the wait for a process to go after SIGKILL, which only
// a process stuck in the kernel survives.
const killWait = 10 * time.Second

// Open opens the state dir dir for a new runner: it makes the directory,
// checks that it and its subdirectories can be trusted, takes its lock (a
// *dirlock.HeldError if another runner holds it), refuses a dir a newer
// graft wrote (a *statedir.NewerError), reads the
// records of processes a previous runner left, and starts stopping those
// that still run. Their instances refuse starts until they are gone.
func Open(dir string, opt Options) (*Runner, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	log := opt.Logger
	dir, lock, err := lockStateDir(dir)
	if err != nil {
		return nil, err
	}
	if err := statedir.Stamp(dir, statedir.Format{Format: statedir.RunnerFormat, Version: opt.Version}, log); err != nil {
		lock.Close()
		return nil, err
	}
	st, err := openState(dir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	bootID, err := proc.BootID()
	if err != nil {
		log.Warn("no boot id: recorded processes are found by their invocation id only", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{
		dir:       dir,
		opt:       opt,
		log:       log,
		lock:      lock,
		state:     st,
		bootID:    bootID,
		since:     time.Now(),
		ctx:       ctx,
		cancel:    cancel,
		quit:      make(chan struct{}),
		sessions:  map[string]*session{},
		instances: map[string]*instance{},
		starting:  map[runtime.Identity]*process{},
	}
	r.metrics = newMetrics(r)
	// The local placement's windows only apply to what the runner leaves
	// to it: a failed ready check's stop, and what a process leaves
	// running when it exits. Both get the runner's grace.
	r.removeHandover = func() {}
	if !opt.NoNamespace {
		hand, remove, err := local.HandoverIn(dir)
		if err != nil {
			log.Warn("no attach socket for the init of the runner's namespace: a runner that replaces its program stops its processes", "err", err)
		} else {
			r.hand, r.removeHandover = hand, remove
		}
	}
	r.local = local.New(local.Options{
		Timing:      runtime.Timing{ShutdownTimeout: opt.Grace, ExitWindow: opt.Grace, KillAfter: opt.Grace},
		Started:     r.spawned,
		NoNamespace: opt.NoNamespace,
		Handover:    r.hand,
		Sockets:     filepath.Join(dir, statedir.Sockets),
	})
	if err := r.recoverRecords(); err != nil {
		r.local.Close()
		r.removeHandover()
		st.close()
		lock.Close()
		cancel()
		return nil, err
	}
	log.Info("runner open", "dir", dir, "version", opt.Version, "lease", opt.Lease, "grace", opt.Grace)
	r.local.LogIsolation(log, "the runner")
	return r, nil
}

// withDefaults is opt with its zero values given their defaults.
func (opt Options) withDefaults() (Options, error) {
	if opt.Lease < 0 || opt.Grace < 0 {
		return opt, errors.New("runner: lease and grace must be positive")
	}
	if opt.Lease == 0 {
		opt.Lease = runnerapi.DefaultLease
	}
	if opt.Grace == 0 {
		opt.Grace = DefaultGrace
	}
	if opt.Version == "" {
		opt.Version = skew.Version()
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return opt, nil
}

// lockStateDir takes state dir dir, made absolute, for this runner. A
// state dir another user may write, or made, is refused: they could make
// the runner write where they choose (a *safefs.UnsafeError names the
// path and the fix); one another runner holds is a *dirlock.HeldError.
func lockStateDir(dir string) (string, *os.File, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	if err := safefs.Root(dir, 0o700); err != nil {
		return "", nil, err
	}
	lock, err := dirlock.Lock(filepath.Join(dir, lockFile), "runner")
	if err != nil {
		var held *dirlock.HeldError
		if errors.As(err, &held) {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("lock the state dir: %w", err)
	}
	return dir, lock, nil
}

// Dir is the runner's state dir.
func (r *Runner) Dir() string { return r.dir }

// instance returns the state of name, making it. r.mu is held.
func (r *Runner) instance(name string) *instance {
	inst := r.instances[name]
	if inst == nil {
		inst = &instance{name: name}
		r.instances[name] = inst
	}
	return inst
}

// Close ends every session and stops every process (interrupt, then kill
// after grace), waits until their exits are confirmed, and releases the
// state dir. Processes whose exit could not be confirmed are its error;
// their records stay for the next runner. Close is safe to call twice.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.quit
		return nil
	}
	r.closed = true
	var procs []*process
	for _, s := range r.sessions {
		r.detach(s)
	}
	for _, inst := range r.instances {
		for _, p := range []*process{inst.cur, inst.old} {
			if p != nil {
				procs = append(procs, p)
			}
		}
	}
	r.mu.Unlock()
	r.cancel()
	var errs *multierror.Error
	for _, st := range r.stopAll(procs) {
		if st.Outcome == runnerapi.Unconfirmed {
			errs = multierror.Append(errs, fmt.Errorf("stop %s generation %d: its exit is not confirmed", st.Instance, st.Generation))
		}
	}
	close(r.quit)
	r.wg.Wait()
	// local waits for every exit, without end: a process stuck in the
	// kernel would hold the runner forever. It was given up on above.
	closed := make(chan error, 1)
	go func() { closed <- r.local.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			errs = multierror.Append(errs, err)
		}
	case <-time.After(killWait):
		errs = multierror.Append(errs, errors.New("processes still running after SIGKILL were left behind"))
	}
	r.removeHandover()
	if err := r.state.close(); err != nil {
		errs = multierror.Append(errs, err)
	}
	if err := r.lock.Close(); err != nil {
		errs = multierror.Append(errs, err)
	}
	r.log.Info("runner closed")
	return errs.ErrorOrNil()
}

// stopAll interrupts procs at once and kills them after grace, and
// reports how each ended.
func (r *Runner) stopAll(procs []*process) []runnerapi.Stopped {
	out := make([]runnerapi.Stopped, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exit, ok := r.stopProcess(p, stopForced, 0)
			out[i] = runnerapi.Stopped{Instance: p.name, Generation: p.gen, Outcome: runnerapi.Outcome(exit.Outcome)}
			if !ok {
				out[i].Outcome = runnerapi.Unconfirmed
			}
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out
}
