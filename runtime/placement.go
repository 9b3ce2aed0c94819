// Package runtime says what a placement must do to run plugins (start
// one, stop it in graft's order, report its state) and supervises a plugin
// across restarts; runtime/local, runtime/worker, runtime/remote and
// runtime/floating do it.
package runtime

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/spec"
)

// Placement runs the plugins of one placement: local child processes,
// WebAssembly workers, processes on a runner, or floating ones.
//
// The life of a plugin under a placement:
//
//	Start ──► running ──► (exits on its own) ──────────► gone: Done closed, Exit set
//	             │
//	             └──► Stop: graceful stop, bounded ──► forced if needed ──► gone
//
// A Placement is safe for concurrent use.
type Placement interface {
	// Start starts the plugin of req and returns its handle once it runs
	// and, when it has a ready check, is ready. A plugin that exits before
	// that, or is not ready in time, fails the start with a *StartError
	// carrying its exit and the last lines of its output; nothing of it is
	// left running.
	//
	// Cancelling ctx aborts the start: whatever was started is stopped at
	// once, without the graceful windows, and Start returns ctx's error.
	Start(ctx context.Context, req Request) (Handle, error)

	// Close stops every plugin the placement still runs, as Handle.Stop
	// does, and releases what the placement holds. It returns the errors
	// of those stops. A placement is not used after Close.
	Close() error
}

// Request is what a placement needs to start one plugin.
type Request struct {
	// Name is the plugin's name: its GRAFT_PLUGIN, and what messages
	// call it.
	Name string
	// Launch is the plugin's process (spec.Plugin.Launch): what a local
	// placement and a runner run, and the ready and health checks of
	// every placement.
	Launch launch.Spec
	// Plugin is the plugin's spec, with defaults applied, for what a
	// placement needs beyond Launch: a worker's module, a floating
	// plugin's election, the Supervisor's retry. The requests of a
	// runner to its local placement have none.
	Plugin *spec.Plugin
	// Project is the spec's project name.
	Project string
	// Dir is the directory that relative paths of the spec resolve in.
	Dir string
	// Env is added to the plugin's environment after its spec's env, such
	// as the GRAFT_ADDR_<PLUGIN> of floating providers.
	Env map[string]string
	// Output receives the plugin's stdout and stderr.
	Output Output
	// Started, when set, is called once the plugin's process has started
	// (exec'd), before its ready check, with its handle: the condition
	// started of docs/semantics.md, "Dependency conditions". A placement
	// that cannot tell leaves it to the Supervisor, which counts the
	// plugin started when its start returns.
	Started func(Handle)
	// Log, when set, receives the transitions of the plugin's health.
	Log *slog.Logger
	// Identity, when set, is the identity the plugin gets, instead of the
	// placement's own (a fresh UUID and generation 1): a floating plugin
	// gets its instance name and the election's epoch.
	Identity *Identity
	// Tag, when set, is kept with a local process by the init of the
	// host's PID namespace, which then keeps the process for the next
	// host once this one is gone, and gives it the tag to adopt it by
	// (docs/upgrade.md). A process without one dies with its host.
	Tag string
	// UpgradeOnly keeps a tagged process only across an upgrade of the
	// host, never past a crash: a floating plugin's, whose lease another
	// host may take once its host is gone.
	UpgradeOnly bool
	// Overlap says that the plugin's running process runs on beside this
	// start's (a start-first replacement): a runner keeps the instance's
	// running generation (runnerapi.Start.Overlap); a local placement
	// runs any two processes side by side.
	Overlap bool
}

// For is r made the request to start plugin p: with p's name, its
// process (spec.Plugin.Launch) and its spec.
func (r Request) For(p *spec.Plugin) Request {
	r.Name, r.Launch, r.Plugin = p.Name, p.Launch(), p
	return r
}

// Path resolves a path of the plugin's spec: relative to Dir, the plugins
// file's directory, unless absolute (spec.Resolve).
func (r Request) Path(path string) string { return spec.Resolve(r.Dir, path) }

// Handle is one started plugin: one process, module instance or remote
// execution, from its start until it is gone.
type Handle interface {
	// Identity is the identity the plugin sees in its environment.
	Identity() Identity
	// PID is the process id, or 0 where there is none (a worker).
	PID() int
	// Done is closed once the plugin is gone and its end confirmed: the
	// process reaped, the module's goroutine returned, the runner's
	// confirmation received.
	Done() <-chan struct{}
	// Exit reports how the plugin ended. It is valid once Done is closed.
	Exit() Exit
	// Stop stops the plugin in graft's order (docs/stopping.md, "The stop
	// sequence"): the graceful stop bounded by the shutdown timeout, then
	// the placement's way of making sure it is gone. It returns the outcome
	// and, when the forced part had to do more than the plugin allowed for,
	// a *CleanupError whose causes say what (a LocalTerminationTimeout,
	// say). Stopping a plugin that is gone returns its exit at once; Stop
	// is idempotent and safe to call from several goroutines, and while the
	// plugin exits on its own.
	//
	// Cancelling ctx cuts the graceful part short: the plugin is forced at
	// once, and Stop still waits until its end is confirmed.
	Stop(ctx context.Context) (Outcome, error)
}

// Prober is a Handle that can run a check's command as its plugin runs
// (same directory and environment, reaped by the same machinery): the
// exec health checks of a runner, which runs the process.
type Prober interface {
	Handle
	Probe(ctx context.Context, argv []string) error
}

// HealthSource is a Handle that runs its plugin's health check (its
// spec's health:) where its process runs: the host for a local or worker
// plugin, the runner for a runner's, whose results come through the
// session's events. The Supervisor reads the results and decides what an
// unhealthy plugin becomes. The channel is nil without a check, and
// closed when no more results come.
type HealthSource interface {
	Handle
	HealthResults() <-chan health.Result
}

// HealthSetter is a HealthSource whose checks can change while the
// process runs (a change of health in place: spec.Traits.LiveHealth).
type HealthSetter interface {
	HealthSource
	// SetHealth ends the running checks and runs hc's from now on (none
	// when nil), as at a start: after hc's start period. It fails when
	// the checks could not be changed (a runner that did not answer):
	// the old ones may then run on.
	SetHealth(ctx context.Context, hc *launch.Health) error
}

// Identity is what a plugin knows of itself (docs/semantics.md, "Identity
// and generations"): a fresh UUID and generation 1 for local and worker
// plugins, the instance name and a growing generation through a runner.
type Identity struct {
	ID         string `json:"id"`
	Generation int64  `json:"generation"`
}

// Exit is how a plugin ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int `json:"code"`
	// Signal names the signal that ended the process, such as "SIGKILL".
	Signal string `json:"signal,omitempty"`
	// Error says what ended it when no exit status can: a WebAssembly
	// trap, a module that could not be instantiated, a termination.
	Error string `json:"error,omitempty"`
	// Requested is true when Stop ended it, false when it ended on its own.
	Requested bool `json:"requested"`
	// Lost is true when the placement lost track of it (the runner could
	// not be reached): Error says why. It may run on until its lease runs
	// out.
	Lost bool `json:"lost,omitempty"`
	// Outcome is Exited, or Killed when forced termination was needed.
	Outcome Outcome `json:"outcome"`
	// Tail is the last lines of its output.
	Tail []string `json:"tail,omitempty"`
	// At is when its end was confirmed.
	At time.Time `json:"at"`
}

// Success reports whether the plugin exited with status 0 by itself.
func (e Exit) Success() bool { return e.Code == 0 && e.Signal == "" && e.Error == "" }

// String describes the exit as Go's os.ProcessState does: "exit status 3",
// "signal: killed".
func (e Exit) String() string {
	if e.Error != "" {
		return e.Error
	}
	if e.Signal != "" {
		return "signal: " + e.Signal
	}
	return "exit status " + strconv.Itoa(e.Code)
}

// SocketHolder is a placement that holds its plugins' sockets where they
// run (a runner), and can be asked to hold those of a start ahead of it:
// what an apply does before it stops anything (docs/semantics.md, "Held
// sockets").
type SocketHolder interface {
	// HoldSockets binds now, or keeps, the sockets req's start will
	// list. A socket that cannot be bound is a *SocketError; any other
	// error is that the placement could not be asked now.
	HoldSockets(ctx context.Context, req Request) error
}

// SocketError is a socket that a placement cannot hold: its address is
// taken, say.
type SocketError struct{ Err error }

func (e *SocketError) Error() string { return e.Err.Error() }
func (e *SocketError) Unwrap() error { return e.Err }
