package runner

import (
	"errors"
	"fmt"

	"github.com/graftland/graft/runnerapi"
)

// The runner's domain errors: each has a kind, which http.go's statusOf
// turns into the HTTP status of its answer.

func noSession(id string) *kindError {
	return kindErr(runnerapi.KindNoSession, "no session %q: it never was, or its lease ran out and its processes were stopped", id)
}

func unconfirmed(op, name string, gen int64) *kindError {
	return kindErr(runnerapi.KindUnconfirmed, "%s %s: generation %d of %s may still be running: its exit is not confirmed", op, name, gen, name)
}

var errClosing = kindErr(runnerapi.KindInternal, "the runner is shutting down")

// kindError is a domain error of the runner: its answer, whose kind
// says what went wrong (runnerapi's Kind constants); http.go's statusOf
// gives it its HTTP status.
type kindError struct {
	body runnerapi.ErrorBody
}

func (e *kindError) Error() string { return e.body.Error }

// noGeneration is the answer to a start that could not take a
// generation: none is left, or the state dir could not be read or written.
func (r *Runner) noGeneration(name string, err error) error {
	var exhausted *ExhaustedError
	if errors.As(err, &exhausted) {
		r.log.Error("start refused: no generation is left", "instance", name, "err", err)
		return kindErr(runnerapi.KindExhausted, "start %s: %v: nothing was started", name, err)
	}
	r.log.Error("start refused: the state dir cannot be written", "instance", name, "err", err)
	return kindErr(runnerapi.KindState, "start %s: %v: nothing was started", name, err)
}

func kindErr(kind, format string, args ...any) *kindError {
	return &kindError{body: runnerapi.ErrorBody{Error: fmt.Sprintf(format, args...), Kind: kind}}
}
