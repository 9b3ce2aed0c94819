package server

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/graftland/graft/spec"
)

// The checks of the control API's requests, after decoding: what they
// refuse is a 400, and nothing of the request happens.

// validateCommon checks the fields every apply-like request may carry.
func validateCommon(req *applyWire) error {
	if req.Parallelism < 0 {
		return fmt.Errorf("parallelism %d: want a positive number, or 0 for the default", req.Parallelism)
	}
	if req.LockWait < 0 || req.LockWait > math.MaxInt64/int64(time.Millisecond) {
		return fmt.Errorf("lockWait %d: want a number of milliseconds, 0 or more", req.LockWait)
	}
	// The holder goes to the host's log, and to whoever finds the lock
	// held.
	if len(req.Holder) > maxHolder {
		return fmt.Errorf("holder: %d bytes, want at most %d", len(req.Holder), maxHolder)
	}
	return nil
}

// maxHolder bounds hostapi.ApplyRequest.Holder.
const maxHolder = 1024

// validateApply: an apply brings about a source. Without one it would be
// the empty spec, which stops every plugin: that is graft down's to do.
func validateApply(req *applyWire) error {
	if req.Source.YAML == "" {
		return errors.New("an apply needs a source: the plugins file, with its content (to stop every plugin: graft down)")
	}
	return validateNames(req.Restart)
}

// validateRestart: a restart names plugins of the last applied spec, and
// carries no spec of its own.
func validateRestart(req *applyWire) error {
	if len(req.Restart) == 0 {
		return errors.New("a restart names the plugins to restart")
	}
	if !noSource(req) {
		return errors.New("a restart carries no source or plan: it restarts plugins of the last applied spec")
	}
	return validateNames(req.Restart)
}

// validateNames checks the plugins a request names to restart.
func validateNames(names []string) error {
	for _, name := range names {
		if !spec.ValidPlugin(name) {
			return fmt.Errorf("restart %q: not a plugin's name: a plugin's name has %s", name, spec.NameRule)
		}
	}
	return nil
}

// validateDown: a down stops every plugin; it carries no spec and names
// none.
func validateDown(req *applyWire) error {
	if !noSource(req) || len(req.Restart) > 0 {
		return errors.New("a down carries no source, plan or plugins: it stops every plugin")
	}
	return nil
}

// noSource reports whether req carries neither a source nor a plan.
func noSource(req *applyWire) bool {
	src := req.Source
	return src.File == "" && src.Dir == "" && src.YAML == "" && src.DigestKey == "" && len(src.Vars) == 0 &&
		req.Plan == nil
}
