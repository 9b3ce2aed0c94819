// Package launch is the description of a plugin's process that every
// placement runs: its command, directory, environment, stop signal and
// checks. spec builds it from plugins.yaml, runtime.Request carries it to
// a placement, the runner's API sends it whole (runnerapi.Start embeds
// it), and Validate checks it on both sides of that wire.
//
// A field added here reaches every placement, the runner included,
// without another copy: docs/architecture.md, "Where a change goes".
package launch

import "time"

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
	// StopSignal begins the graceful stop; empty means DefaultStopSignal.
	StopSignal string `json:"stopSignal,omitempty"`
	// Ready gates the start until the plugin answers.
	Ready *Ready `json:"ready,omitempty"`
	// Health is a liveness check run for as long as the process runs,
	// where it runs; whoever supervises it counts the failures.
	Health *Health `json:"health,omitempty"`
}

// The defaults of a Spec's unset fields (docs/semantics.md, "Windows and
// defaults").
const (
	DefaultStopSignal     = "SIGTERM"
	DefaultReadyTimeout   = 30 * time.Second // how long a start waits for ready
	DefaultHealthInterval = 10 * time.Second // between the starts of two health checks
	DefaultHealthTimeout  = 5 * time.Second  // how long one health check may take
)

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
