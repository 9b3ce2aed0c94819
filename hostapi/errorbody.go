package hostapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/graftland/graft/internal/errkind"
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
	Step *Step `json:"step,omitempty"`
	// Hint tells the operator what to do.
	Hint string `json:"hint,omitempty"`
}

// The kinds of the host's own refusals; the other kinds that cross the
// API are declared by the packages whose errors they are
// (internal/errkind): "spec" (a bad spec), "plan" (a saved plan its
// checks refuse), "cleanup" and "start" (a stop that failed, its end
// unconfirmed, and a start that ran and failed), "cancelled" (an apply
// cancelled before every step began).
const (
	KindLocked = "locked" // a *LockedError: another apply holds the apply lock
	KindStale  = "stale"  // a *StaleError: a saved plan no longer matches what runs
	KindNoSpec = "nospec" // a *NothingAppliedError (graft restart)
	// KindUpgradeRefused is a *UpgradeRefusedError: the new program of
	// graft upgrade cannot take over.
	KindUpgradeRefused = "upgrade-refused"
)

var (
	_ = errkind.Type(KindLocked, http.StatusConflict, (*LockedError)(nil), true)
	_ = errkind.Type(KindStale, http.StatusConflict, (*StaleError)(nil), true)
	_ = errkind.Type(KindNoSpec, http.StatusConflict, (*NothingAppliedError)(nil), false)
	_ = errkind.Type(KindUpgradeRefused, http.StatusUnprocessableEntity, (*UpgradeRefusedError)(nil), true)
)

// Encode is err as it crosses the API: its message, the kind of the
// outermost error of its chain that has one (internal/errkind) with that
// error's fields, and its hint, which ErrorBody.Err gives back. The host
// adds the step of a step's failure.
func Encode(err error) ErrorBody {
	var hint interface{ Hint() string }
	b := ErrorBody{Error: err.Error()}
	if k, e := errkind.Of(err); k != nil {
		b.Kind = k.Name
		b.Detail, _ = k.Detail(e) // the declared types always marshal
	}
	if errors.As(err, &hint) {
		b.Hint = hint.Hint()
	}
	return b
}

// Err gives the error of b its type back, as the host had it: a kind
// declared in this program becomes its type, wrapped in a *StepError
// when it is a step's; another is an error with b's message and hint.
func (b ErrorBody) Err() error {
	var err error
	if k := errkind.Lookup(b.Kind); k != nil {
		err = k.New(b.Detail)
	}
	if err == nil {
		err = &hinted{msg: b.Error, hint: b.Hint}
	}
	if b.Step != nil {
		return &StepError{Step: *b.Step, Err: err, msg: b.Error}
	}
	return err
}

// StepError is a step of an apply that failed, as a client has it: the
// step, and its error with the type the host gave it.
type StepError struct {
	Step Step
	Err  error
	msg  string // the host's text of it
}

func (e *StepError) Error() string { return e.msg }

func (e *StepError) Unwrap() error { return e.Err }

// Err gives back the error of a forced stop, as the host had it: a
// *runtime.CleanupError where the program links runtime, else an error
// with its causes' text.
func (c *Cleanup) Err() error {
	detail, _ := json.Marshal(c) // plain fields: always marshals
	if k := errkind.Lookup("cleanup"); k != nil {
		if err := k.New(detail); err != nil {
			return err
		}
	}
	msgs := make([]string, len(c.Causes))
	for i, cause := range c.Causes {
		msgs[i] = cause.Message
	}
	return errors.New("stop " + c.Plugin + ": " + c.Outcome + ": " + strings.Join(msgs, "; "))
}

// hinted is an error known by its message, with the hint the host gave.
type hinted struct{ msg, hint string }

func (e *hinted) Error() string { return e.msg }

// Hint tells the operator what to do about it.
func (e *hinted) Hint() string { return e.hint }
