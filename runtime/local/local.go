// Package local runs plugins as child processes of the host, each in its
// own process group (and PID namespace, where it can), and stops them in
// graft's exact order (docs/stopping.md, "The stop sequence").
package local

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/instance"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
)

// Options configures a Local placement.
type Options struct {
	// Timing holds the stop's windows; zero fields get
	// runtime.DefaultTiming's.
	Timing runtime.Timing
	// Env is the environment of the daemon that starts the plugins, as
	// KEY=VALUE: their minimal base (runtime.BaseEnv) and what their
	// inheritEnv names are taken from; nil means this process's own.
	// Nothing else of it reaches a plugin.
	Env []string
	// Started, when set, is called with the handle of each plugin as soon
	// as its process runs, before its ready check: the runner records the
	// pid of a start by it before the start answers.
	Started func(runtime.Handle)
	// Records, when set, is a directory where each start is recorded
	// before it begins, until its process is gone (see Start).
	Records string
	// NoNamespace starts plugins as the host's children, outside a PID
	// namespace even where one can be made: what a plugin
	// forks then outlives a host killed outright (see docs/stopping.md).
	NoNamespace bool
	// Handover, when its socket is set, is where the init of the PID
	// namespace waits for the next host once this one is gone, keeping
	// the processes started with a Request.Tag AdoptWindow long
	// (docs/upgrade.md); 0 keeps none past a crash.
	Handover    proc.Handover
	AdoptWindow time.Duration
	// Sockets, when set, is where the record of the held sockets is
	// written for the daemon's next program in this process (HandSockets),
	// and read back by New.
	Sockets string
}

// ErrNoNamespace is why plugins run without PID namespaces when
// Options.NoNamespace says so.
var ErrNoNamespace = errors.New("PID namespaces are turned off")

func (o Options) withDefaults() Options {
	d := runtime.DefaultTiming()
	if o.Timing.ShutdownTimeout <= 0 {
		o.Timing.ShutdownTimeout = d.ShutdownTimeout
	}
	if o.Timing.ExitWindow <= 0 {
		o.Timing.ExitWindow = d.ExitWindow
	}
	if o.Timing.KillAfter <= 0 {
		o.Timing.KillAfter = d.KillAfter
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	return o
}

// Start starts the plugin's command in its own process group with its env
// and graft's identity variables, and returns once the program runs and,
// if it has a ready check, is ready. See runtime.Placement.
//
// With Options.Records set, the process carries a fresh invocation id in
// its environment (EnvInvocation); and, where plugins run outside a PID
// namespace of the daemon's own, the start is recorded there first,
// before the process exists and so before its ready check, and the record
// is removed once the process is gone. A daemon killed outright, even
// during a ready check, leaves its records behind, and the next one finds
// by them what its plugins left running: what left a plugin's process
// group, or was its child. In the daemon's namespace nothing can be left
// (the kernel kills the namespace with the daemon), so nothing is
// recorded: a record would cost a file per start and find nothing.
func (l *Local) Start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	if l.opt.Records == "" {
		return l.start(ctx, req)
	}
	inv := uuid.NewString()
	env := maps.Clone(req.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvInvocation] = inv
	req.Env = env
	if l.Isolation().Namespace {
		return l.start(ctx, req)
	}
	return l.startRecorded(ctx, req, inv)
}

// environ is the environment of one start: base, the minimal base taken
// from parent (runtime.BaseEnv), the HOME, USER and LOGNAME of the user
// it runs as (user, from launch.Cred), what the plugin's inheritEnv
// passes on of parent, the spec's env, the request's, then graft's own
// variables, later ones replacing earlier.
func environ(base, parent []string, req runtime.Request, id runtime.Identity, user map[string]string) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	setAll := func(kvs []string) {
		for _, kv := range kvs {
			if k, v, ok := strings.Cut(kv, "="); ok {
				set(k, v)
			}
		}
	}
	setAll(base)
	for _, k := range slices.Sorted(maps.Keys(user)) {
		set(k, user[k])
	}
	setAll(runtime.Inherited(parent, req.Launch.InheritEnv))
	for _, env := range []map[string]string{req.Launch.Env, req.Env} {
		for _, k := range slices.Sorted(maps.Keys(env)) {
			set(k, env[k])
		}
	}
	set(instance.EnvID, id.ID)
	set(instance.EnvGeneration, strconv.FormatInt(id.Generation, 10))
	set(instance.EnvPlugin, req.Name)
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = k + "=" + vars[k]
	}
	return out
}

// marker is the variable of its environment that marks a process and its
// family (proc.Cmd.Marker): its invocation, one process's alone, when it
// has one; else its instance, whose id a local start makes afresh. Two
// generations of a runner's instance run side by side in a start-first
// replacement: each family is its own.
func marker(req runtime.Request, id runtime.Identity) string {
	if inv := req.Env[EnvInvocation]; inv != "" {
		return EnvInvocation + "=" + inv
	}
	return instance.EnvID + "=" + id.ID
}

// workDir is where the plugin runs: its dir, relative to the spec's.
func workDir(req runtime.Request) string { return req.Path(req.Launch.Dir) }

// KeptName is the plugin of a tag the init of a host's namespace kept
// with a process (Kept), or "" when it is not one.
func KeptName(tag string) string {
	var k kept
	if json.Unmarshal([]byte(tag), &k) != nil {
		return ""
	}
	return k.Name
}

// kept is the init's tag of a process: what Kept is read from.
type kept struct {
	Name       string `json:"name"`
	Instance   string `json:"instance"`
	Generation int64  `json:"generation"`
	Tag        string `json:"tag"`
	// Since is when its process started, in Unix milliseconds.
	Since int64 `json:"since"`
}

// Kept is a process an earlier host left with the init of its namespace:
// the plugin it runs, its identity and the tag its host started it with
// (Request.Tag), from what the init kept with it.
type Kept struct {
	proc.Held
	Name     string
	Identity runtime.Identity
	Tag      string
	Since    time.Time // when its process started
}
