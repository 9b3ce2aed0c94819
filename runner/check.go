package runner

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runnerapi"
)

// The checks of request bodies, after decoding: what they refuse is a
// 400, and nothing of the request happens.

func checkOpenSession(o *runnerapi.OpenSession) error {
	if o.LeaseMillis < 0 || o.LeaseMillis > int64(maxLease/time.Millisecond) {
		return fmt.Errorf("leaseMillis %d: want a positive number of milliseconds, or 0 for the runner's lease", o.LeaseMillis)
	}
	return noNUL("holder", o.Holder)
}

// checkStart refuses a start whose fields no process can be given: its
// command, environment and names, its stop signal and its readiness check.
func checkStart(s *runnerapi.Start) error {
	if s.Session == "" {
		return errors.New("no session")
	}
	if s.Plugin == "" {
		return errors.New("no plugin")
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		return errors.New("no command")
	}
	for i, a := range s.Command {
		if err := noNUL(fmt.Sprintf("command[%d]", i), a); err != nil {
			return err
		}
	}
	if err := checkEnv(s.Env, s.InheritEnv); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"plugin", s.Plugin}, {"project", s.Project}, {"dir", s.Dir}} {
		if err := noNUL(f.name, f.v); err != nil {
			return err
		}
	}
	if s.StopSignal != "" && !proc.KnownSignal(s.StopSignal) {
		return fmt.Errorf("stopSignal %q: not a signal (want a name such as SIGTERM)", s.StopSignal)
	}
	if rd := s.Ready; rd != nil {
		if err := checkReady(rd); err != nil {
			return err
		}
	}
	if hc := s.Health; hc != nil {
		return checkHealth(hc)
	}
	return nil
}

// checkReady refuses a readiness check with a log pattern that is not
// RE2, or whose tcp, http or exec checkProbe refuses; with a pattern,
// none of them is needed.
func checkReady(rd *runnerapi.Ready) error {
	if rd.Log == "" {
		return checkProbe("ready", rd.TCP, rd.HTTP, rd.Exec, rd.TimeoutMillis)
	}
	if _, err := regexp.Compile(rd.Log); err != nil {
		return fmt.Errorf("ready: log: %v", err)
	}
	if rd.TCP == "" && rd.HTTP == "" && len(rd.Exec) == 0 {
		return checkProbe("ready", "", "", []string{"-"}, rd.TimeoutMillis) // the timeout alone
	}
	return checkProbe("ready", rd.TCP, rd.HTTP, rd.Exec, rd.TimeoutMillis)
}

// checkHealth refuses a health check checkProbe refuses, or whose
// windows are negative or beyond any lease.
func checkHealth(hc *runnerapi.Health) error {
	if err := checkProbe("health", hc.TCP, hc.HTTP, hc.Exec, hc.TimeoutMillis); err != nil {
		return err
	}
	for _, w := range []struct {
		name string
		v    int64
	}{{"intervalMillis", hc.IntervalMillis}, {"startPeriodMillis", hc.StartPeriodMillis}} {
		if w.v < 0 || w.v > int64(maxLease/time.Millisecond) {
			return fmt.Errorf("health: %s %d: want a positive number of milliseconds, or 0 for the default", w.name, w.v)
		}
	}
	return nil
}

// checkEnv refuses a name that cannot be an environment variable's, in the
// variables set or in those inherited, and a value with a NUL byte.
func checkEnv(env map[string]string, inherit []string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env: bad name %q", k)
		}
		if err := noNUL("env "+k, v); err != nil {
			return err
		}
	}
	for _, k := range inherit {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("inheritEnv: bad name %q", k)
		}
	}
	return nil
}

// checkProbe refuses a readiness or health check (what) that is not
// exactly one of tcp, http and exec, or whose one cannot be carried out.
func checkProbe(what, tcp, http string, exec []string, timeoutMillis int64) error {
	n := 0
	for _, set := range []bool{tcp != "", http != "", len(exec) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%s: want exactly one of tcp, http and exec", what)
	}
	if timeoutMillis < 0 || timeoutMillis > int64(maxLease/time.Millisecond) {
		return fmt.Errorf("%s: timeoutMillis %d: want a positive number of milliseconds, or 0 for the default", what, timeoutMillis)
	}
	if http != "" {
		u, err := url.Parse(http)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: http %q: want an http or https URL", what, http)
		}
	}
	if len(exec) > 0 && exec[0] == "" {
		return fmt.Errorf("%s: exec: no command", what)
	}
	for i, a := range exec {
		if err := noNUL(fmt.Sprintf("%s: exec[%d]", what, i), a); err != nil {
			return err
		}
	}
	return noNUL(what+": tcp", tcp)
}

func checkStop(s *runnerapi.Stop) error {
	if s.Session == "" {
		return errors.New("no session")
	}
	if s.Generation <= 0 {
		return fmt.Errorf("generation %d: want the generation its start answered", s.Generation)
	}
	if s.ShutdownTimeoutMillis < 0 || s.ShutdownTimeoutMillis > int64(maxLease/time.Millisecond) {
		return fmt.Errorf("shutdownTimeoutMillis %d: want a positive number of milliseconds, or 0 for 5 seconds", s.ShutdownTimeoutMillis)
	}
	return nil
}

// noNUL refuses a string no process can be given.
func noNUL(field, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%s: holds a NUL byte", field)
	}
	return nil
}
