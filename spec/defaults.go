package spec

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/graftland/graft/launch"
)

// The defaults of plugins.yaml (docs/semantics.md, "Windows and defaults"
// and "Floating plugins: the election"). They are applied in applyDefaults
// and nowhere else.
const (
	DefaultStopSignal   = launch.DefaultStopSignal
	DefaultMargin       = 5 * time.Second            // the host waits shutdown timeout + lease + margin
	DefaultReadyTimeout = launch.DefaultReadyTimeout // how long a start waits for ready
	DefaultOnceTimeout  = time.Hour                  // how long a one-shot may run, to its completion

	DefaultHealthInterval = launch.DefaultHealthInterval // between the starts of two health checks
	DefaultHealthTimeout  = launch.DefaultHealthTimeout  // how long one health check may take
	DefaultHealthFailures = 3                            // failed checks in a row that make a plugin unhealthy
	DefaultRetryDelay     = 1 * time.Second
	DefaultRetryFactor    = 2.0
	DefaultRetryMax       = 1 * time.Minute
	DefaultElectTTL       = 15 * time.Second // an unchanged lease older than this: its leader is dead
	DefaultElectRenew     = 3 * time.Second  // the leader rewrites the lease this often
	DefaultElectPoll      = 2 * time.Second  // the others look at it this often
	DefaultLockStale      = 15 * time.Second // a lock file older than this was left by a crash
	DefaultSessionTTL     = 15 * time.Second // etcd: the session's lease, as ttl
	DefaultEtcdPrefix     = "/graft/elect/"  // etcd: the key prefix of graft's elections
	DefaultProbeFailures  = 3                // failed probes of the leader's plugin before it is replaced
	DefaultStartFailures  = 3                // failed starts in a row before the leader releases the lease
	// DefaultReadTimeout bounds the reads of the files a spec names,
	// all of them together: a parse that takes longer fails.
	DefaultReadTimeout = 30 * time.Second
	// ShutdownTimeout bounds the graceful stop. It is fixed in YAML
	// (docs/stopping.md, "The stop sequence"); the Go API of the placements
	// can change it.
	ShutdownTimeout = 5 * time.Second
	// StopBudget is the longest a stop takes in YAML: the shutdown timeout,
	// then 1 second to exit and 1 second from SIGTERM to SIGKILL
	// (docs/stopping.md). A floating plugin's ttl must leave room for it.
	StopBudget = ShutdownTimeout + 2*time.Second
)

// applyDefaults fills every field the file left unset. Values the file set,
// even to zero, were checked by validateValues before this runs.
func (s *Spec) applyDefaults() {
	if s.Name == "" {
		s.Name = projectName(s.Dir)
	}
	if s.Runners == nil {
		s.Runners = map[string]*Runner{}
	}
	if s.Plugins == nil {
		s.Plugins = map[string]*Plugin{}
	}
	for name, r := range s.Runners {
		if r == nil {
			continue // an empty entry, reported by the decoder
		}
		r.Name = name
		orDefault(&r.Connect.Margin, DefaultMargin)
	}
	for name, p := range s.Plugins {
		if p == nil {
			continue // an empty entry, reported by the decoder
		}
		p.Name = name
		if p.Run == "" {
			p.Run = Local
		}
		t := p.Run.Traits()
		if p.StopSignal == "" && t.NoSignal == "" {
			p.StopSignal = DefaultStopSignal
		}
		if t.Instance && p.Instance == "" {
			p.Instance = s.Name + "." + p.Name
		}
		p.applyDefaults()
	}
}

// applyDefaults fills the unset fields of p's blocks: ready, health,
// retry and elect.
func (p *Plugin) applyDefaults() {
	if p.Once.On {
		orDefault(&p.Once.Timeout, DefaultOnceTimeout)
	}
	if p.Ready != nil {
		orDefault(&p.Ready.Timeout, DefaultReadyTimeout)
	}
	if hc := p.Health; hc != nil {
		orDefault(&hc.Interval, DefaultHealthInterval)
		orDefault(&hc.Timeout, DefaultHealthTimeout)
		if hc.Failures == 0 {
			hc.Failures = DefaultHealthFailures
		}
	}
	if r := p.Retry; r != nil {
		orDefault(&r.Delay, DefaultRetryDelay)
		orDefault(&r.Max, max(DefaultRetryMax, r.Delay.Std()))
		if r.Factor == 0 {
			r.Factor = DefaultRetryFactor
		}
	}
	if e := p.Elect; e != nil {
		orDefault(&e.TTL, DefaultElectTTL)
		orDefault(&e.Renew, DefaultElectRenew)
		orDefault(&e.Poll, DefaultElectPoll)
		orDefault(&e.LockStale, DefaultLockStale)
		if e.ProbeFailures == 0 {
			e.ProbeFailures = DefaultProbeFailures
		}
		if e.StartFailures == 0 {
			e.StartFailures = DefaultStartFailures
		}
		if c := e.Etcd; c != nil {
			orDefault(&c.SessionTTL, DefaultSessionTTL)
			if c.Prefix == "" {
				c.Prefix = DefaultEtcdPrefix
			}
		}
	}
}

func orDefault(d *Duration, def time.Duration) {
	if d.IsZero() {
		*d = FromStd(def)
	}
}

// projectName turns a directory name into a project name: lower case, with
// every run of characters a name cannot hold replaced by one "-".
func projectName(dir string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(filepath.Base(dir)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if len(name) > maxNameLen {
		name = strings.TrimRight(name[:maxNameLen], "-")
	}
	if name == "" {
		return "graft"
	}
	return name
}
