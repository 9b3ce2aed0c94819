package runner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

// The checks of request bodies, after decoding: what they refuse is a
// 400, and nothing of the request happens.

func validateOpenSession(o *runnerapi.OpenSession) error {
	if o.LeaseMillis < 0 || o.LeaseMillis > int64(maxLease/time.Millisecond) {
		return fmt.Errorf("leaseMillis %d: want a positive number of milliseconds, or 0 for the runner's lease", o.LeaseMillis)
	}
	return noNUL("holder", o.Holder)
}

// validateStart refuses a start whose fields no process can be given: no
// session, plugin or command, a name with a NUL, or a process that
// launch.Spec.Validate refuses, the check the host's loader makes too.
func validateStart(s *runnerapi.Start) error {
	switch {
	case s.Session == "":
		return errors.New("no session")
	case s.Plugin == "":
		return errors.New("no plugin")
	case len(s.Command) == 0:
		return errors.New("no command")
	}
	for _, f := range []struct{ name, v string }{{"plugin", s.Plugin}, {"project", s.Project}} {
		if err := noNUL(f.name, f.v); err != nil {
			return err
		}
	}
	return s.Validate()
}

func validateStop(s *runnerapi.Stop) error {
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

func validateReload(s *runnerapi.Reload) error {
	switch {
	case s.Session == "":
		return errors.New("no session")
	case s.Generation <= 0:
		return fmt.Errorf("generation %d: want the generation its start answered", s.Generation)
	case s.Reload == nil:
		return errors.New("no reload")
	}
	return s.Validate()
}

func validateSetHealth(s *runnerapi.SetHealth) error {
	switch {
	case s.Session == "":
		return errors.New("no session")
	case s.Generation <= 0:
		return fmt.Errorf("generation %d: want the generation its start answered", s.Generation)
	}
	return (&launch.Spec{Health: s.Health}).Validate()
}

// noNUL refuses a string no process can be given.
func noNUL(field, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%s: holds a NUL byte", field)
	}
	return nil
}

func validateHoldSockets(h *runnerapi.HoldSockets) error {
	if h.Session == "" {
		return errors.New("no session")
	}
	if err := noNUL("dir", h.Dir); err != nil {
		return err
	}
	// The rules of a start's listen and listenKey.
	l := launch.Spec{Command: []string{"-"}, Listen: h.Listen, ListenKey: h.ListenKey}
	return l.Validate()
}
