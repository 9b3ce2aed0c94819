package hostapi

import (
	"encoding/json"
	"errors"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// ErrorBody is an error as it crosses the API: the body of an error
// answer, or one failure of an apply.
type ErrorBody struct {
	Error string `json:"error"`
	// Kind names the error's type, so the client gives it back; empty for
	// an error known by its message only.
	Kind string `json:"kind,omitempty"`
	// Detail holds the fields of the error's type, by Kind.
	Detail json.RawMessage `json:"detail,omitempty"`
	// Step is the step that failed, for a failure of an apply.
	Step *plan.Step `json:"step,omitempty"`
	// Hint tells the operator what to do.
	Hint string `json:"hint,omitempty"`
}

// The kinds of errors.
const (
	KindLocked    = "locked"    // a *LockedError: another apply holds the apply lock
	KindStale     = "stale"     // a *StaleError: a saved plan no longer matches what runs
	KindSpec      = "spec"      // the spec is bad
	KindNoSpec    = "nospec"    // a *NothingAppliedError (graft restart)
	KindCleanup   = "cleanup"   // a *runtime.CleanupError: a stop that failed, its end unconfirmed
	KindStart     = "start"     // a *runtime.StartError: a start that ran and failed
	KindCancelled = "cancelled" // apply.ErrCancelled
	KindPlan      = "plan"      // a *plan.CheckError: a saved plan refused by its checks
)

// Encode is err as it crosses the API, with its kind and fields, which
// ErrorBody.Err gives back.
func Encode(err error) ErrorBody {
	var (
		step    *apply.StepError
		locked  *LockedError
		stale   *StaleError
		nothing *NothingAppliedError
		cleanup *runtime.CleanupError
		start   *runtime.StartError
		bad     spec.Errors
		badPlan *plan.CheckError
		hint    interface{ Hint() string }
	)
	b := ErrorBody{Error: err.Error()}
	if errors.As(err, &step) {
		b.Step = &step.Step
	}
	var detail any
	switch {
	case errors.As(err, &nothing):
		b.Kind = KindNoSpec
	case errors.As(err, &locked):
		b.Kind, detail = KindLocked, locked
	case errors.As(err, &stale):
		b.Kind, detail = KindStale, stale
	case errors.As(err, &bad):
		b.Kind = KindSpec
	case errors.As(err, &badPlan):
		b.Kind, detail = KindPlan, badPlan
	case errors.As(err, &cleanup):
		b.Kind, detail = KindCleanup, cleanup
	case errors.As(err, &start):
		b.Kind, detail = KindStart, start
	case errors.Is(err, apply.ErrCancelled):
		b.Kind = KindCancelled
	}
	if detail != nil {
		b.Detail, _ = json.Marshal(detail) // the types above always marshal
	}
	if errors.As(err, &hint) {
		b.Hint = hint.Hint()
	}
	return b
}

// Err gives the error of b its type back, as the host had it: a kind it
// knows becomes its type, wrapped in an *apply.StepError when it is a
// step's; another is an error with b's message and hint.
func (b ErrorBody) Err() error {
	var err error
	switch b.Kind {
	case KindLocked:
		err = decodeDetail(b, &LockedError{})
	case KindStale:
		err = decodeDetail(b, &StaleError{})
	case KindNoSpec:
		err = &NothingAppliedError{}
	case KindCleanup:
		err = decodeDetail(b, &runtime.CleanupError{})
	case KindStart:
		err = decodeDetail(b, &runtime.StartError{})
	case KindCancelled:
		err = apply.ErrCancelled
	case KindPlan:
		err = decodeDetail(b, &plan.CheckError{})
	default:
		err = &hinted{msg: b.Error, hint: b.Hint}
	}
	if b.Step != nil {
		return &apply.StepError{Step: *b.Step, Err: err}
	}
	return err
}

// decodeDetail fills e from b's detail; one that does not decode (a host
// of another version) is known by its message.
func decodeDetail(b ErrorBody, e error) error {
	if len(b.Detail) == 0 || json.Unmarshal(b.Detail, e) != nil {
		return &hinted{msg: b.Error, hint: b.Hint}
	}
	return e
}

// hinted is an error known by its message, with the hint the host gave.
type hinted struct{ msg, hint string }

func (e *hinted) Error() string { return e.msg }

// Hint tells the operator what to do about it.
func (e *hinted) Hint() string { return e.hint }
