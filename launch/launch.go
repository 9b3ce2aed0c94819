// Package launch is the description of a plugin's process that every
// placement runs: its command, directory, environment, stop signal and
// checks. spec builds it from plugins.yaml, runtime.Request carries it to
// a placement, the runner's API sends it whole (runnerapi.Start embeds
// it), and Validate checks it on both sides of that wire.
//
// A field added here reaches every placement, the runner included,
// without another copy: docs/architecture.md, "Where a change goes".
package launch

import (
	"slices"
	"strings"
	"time"
)

// Spec is the process of one plugin. Its JSON form is the process part of
// the runner's start request (docs/runner-api.md, "Start"): within /v1
// fields are only added, and each new one is left out when unset.
type Spec struct {
	// Command is the program and its arguments. A worker has none: it
	// runs a module, which its placement knows.
	Command []string `json:"command"`
	// Env is added to the process's environment.
	Env map[string]string `json:"env,omitempty"`
	// InheritEnv names variables of the starting daemon's environment
	// that the process gets, when set there; it gets nothing else of that
	// environment but a minimal base (runtime.BaseEnv).
	InheritEnv []string `json:"inheritEnv,omitempty"`
	// Dir is the working directory, as the plugins file gives it: a
	// relative one is resolved by the placement (runtime.Request.Path).
	Dir string `json:"dir,omitempty"`
	// TTY gives the process a pseudo-terminal for its stdout and stderr
	// instead of a pipe, so that it line-buffers as on a terminal
	// (docs/semantics.md, "A terminal for the output").
	TTY bool `json:"tty,omitempty"`
	// StopSignal begins the graceful stop; empty means DefaultStopSignal.
	StopSignal string `json:"stopSignal,omitempty"`
	// StopMode says who gets StopSignal: the process group (StopGroup,
	// the default when empty) or the main process alone (StopMain). The
	// forced steps reach the whole group either way (docs/stopping.md).
	StopMode string `json:"stopMode,omitempty"`
	// Ready gates the start until the plugin answers.
	Ready *Ready `json:"ready,omitempty"`
	// Health is a liveness check run for as long as the process runs,
	// where it runs; whoever supervises it counts the failures.
	Health *Health `json:"health,omitempty"`
	// User and Group are who the process, its exec checks included, runs
	// as: a name or a number, resolved in the user database of the
	// machine that starts it (Resolve). Empty is the starting daemon's.
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Umask is the process's umask, in octal ("007"); empty keeps the
	// starting daemon's.
	Umask string `json:"umask,omitempty"`
	// Limits are its resource limits by LimitNames; the others are the
	// starting daemon's.
	Limits map[string]Limit `json:"limits,omitempty"`
	// Reload is how the running process takes a new config; nil: it
	// cannot, and a change of its config replaces it.
	Reload *Reload `json:"reload,omitempty"`
	// Listen are the sockets held for the process (listen.go).
	Listen []Listen `json:"listen,omitempty"`
	// ListenKey is the key the sockets are held under when processes of
	// several plugins share them (replicas: spec.Plugin); empty: the
	// plugin's own.
	ListenKey string `json:"listenKey,omitempty"`
}

// Validate reports every problem of s, as Problems; nil when it has
// none. It is what a runner checks a start request with, and what the
// loader of plugins.yaml checks a plugin's process with (through
// Problems).
func (s *Spec) Validate() error {
	if ps := s.Problems(nil); len(ps) > 0 {
		return ps
	}
	return nil
}

// Problems lists every problem of s. given tells whether a field was
// written, for a source in which a field can be written empty (`tcp: ""`,
// `exec: []` in YAML), which is then wrong rather than absent; with nil
// a field is given when it is not empty, as on the wire. A field's rule
// is a line here, beside the fields.
func (s *Spec) Problems(given func(field string) bool) Problems {
	c := checker{given: given}
	c.argv("command", s.Command)
	c.env(s.Env)
	c.inheritEnv(s.InheritEnv, s.Env)
	if strings.IndexByte(s.Dir, 0) >= 0 {
		c.add("dir", "contains a NUL byte")
	}
	if c.is("stopSignal", s.StopSignal != "") && !slices.Contains(Signals, s.StopSignal) {
		c.signal("stopSignal", s.StopSignal)
	}
	if c.is("stopMode", s.StopMode != "") && !slices.Contains(StopModes, s.StopMode) {
		p := c.add("stopMode", "unknown stopMode %q; want group or main", s.StopMode)
		p.Value, p.Choices = s.StopMode, StopModes
	}
	c.account("user", s.User)
	c.account("group", s.Group)
	c.umask(s.Umask)
	c.limits(s.Limits)
	if r := s.Ready; r != nil {
		c.ready(r)
	}
	if h := s.Health; h != nil {
		c.health(h)
	}
	if r := s.Reload; r != nil {
		c.reload(r)
	}
	c.listen(s.Listen)
	c.listenKey(s.ListenKey)
	return c.out
}

// The defaults of a Spec's unset fields (docs/semantics.md, "Windows and
// defaults").
const (
	DefaultStopSignal     = "SIGTERM"
	DefaultReadyTimeout   = 30 * time.Second // how long a start waits for ready
	DefaultHealthInterval = 10 * time.Second // between the starts of two health checks
	DefaultHealthTimeout  = 5 * time.Second  // how long one health check may take
)

// The stop modes: who gets the stop signal.
const (
	StopGroup = "group" // the process group, and every member that left it
	StopMain  = "main"  // the main process alone, as docker and systemd's KillMode=mixed
)

// StopModes are the values of StopMode.
var StopModes = []string{StopGroup, StopMain}

// Signals are the names a stop signal may have.
var Signals = []string{"SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGWINCH"}

// WithDefaults is s with its unset fields given their defaults; s itself
// is not changed.
func (s Spec) WithDefaults() Spec {
	if s.StopSignal == "" {
		s.StopSignal = DefaultStopSignal
	}
	if r := s.Ready; r != nil {
		d := *r
		orDefault(&d.Timeout, DefaultReadyTimeout)
		s.Ready = &d
	}
	if h := s.Health; h != nil {
		d := *h
		orDefault(&d.Interval, DefaultHealthInterval)
		orDefault(&d.Timeout, DefaultHealthTimeout)
		s.Health = &d
	}
	return s
}

func orDefault(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}
