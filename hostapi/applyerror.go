package hostapi

import (
	"errors"
	"fmt"
	"strings"
)

// ApplyError is an apply that ran and had failures: its steps' errors,
// each with the type the host gave it (a *StepError around a
// *runtime.CleanupError or a *runtime.StartError, apply.ErrCancelled), so
// that errors.As and errors.Is find them through it.
type ApplyError struct{ Errors []error }

func (e *ApplyError) Error() string {
	if len(e.Errors) == 1 {
		return e.Errors[0].Error()
	}
	msgs := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%d errors:\n  %s", len(e.Errors), strings.Join(msgs, "\n  "))
}

// Unwrap returns the failures, so errors.As and errors.Is look into each.
func (e *ApplyError) Unwrap() []error { return e.Errors }

// err is the error a MsgDone reports: nil, or an *ApplyError.
func (m Message) err() error {
	var errs []error
	for _, f := range m.Failures {
		errs = append(errs, f.Err())
	}
	if len(errs) == 0 {
		// A host that sends only the text of its errors.
		for _, e := range m.Errors {
			errs = append(errs, errors.New(e))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &ApplyError{Errors: errs}
}
