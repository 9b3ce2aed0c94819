package host

import (
	"time"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// ApplyRequest asks the host to bring about a spec (Apply), to replace
// plugins of the last applied one (Restart), or to stop everything
// (Down). Its transport (host/server) makes it of the API's request.
type ApplyRequest struct {
	// Source is the desired spec; none is the empty spec.
	Source spec.Source
	// Plan, when set, is a saved plan to carry out exactly; the host
	// refuses it if the running state changed since it was made.
	Plan *plan.Plan
	// Restart names plugins to replace though unchanged (graft restart);
	// their consumers restart as for any replacement.
	Restart []string
	// Once, with Restart, asks that each plugin named be a one-shot
	// (graft run).
	Once bool
	// Parallelism bounds the steps running at once; 0 is the default, 10.
	Parallelism int
	// LockWait is how long to wait for an apply under way; 0 fails at
	// once.
	LockWait time.Duration
	// Holder says who applies, for whoever finds the apply lock held.
	Holder string
}

// Report receives an apply's progress: the plan it carries out, once
// made, then every step's events, one call at a time. Either may be nil.
type Report struct {
	// Parsed, when set, is called once the spec is parsed, or refused,
	// before the apply waits for its lock: a transport holds large
	// requests to a few being parsed at once (docs/security.md, "Memory").
	Parsed func()
	Plan   func(*plan.Plan)
	Event  func(apply.Event)
}

func (r Report) parsed() {
	if r.Parsed != nil {
		r.Parsed()
	}
}

func (r Report) plan(p *plan.Plan) {
	if r.Plan != nil {
		r.Plan(p)
	}
}

func (r Report) event(e apply.Event) {
	if r.Event != nil {
		r.Event(e)
	}
}
