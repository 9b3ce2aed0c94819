package runtime

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/go-multierror"
)

// The errors of a stop cross the host's API (an apply's events and
// failures) as JSON. Each cause carries a kind that names its type, so
// that the far side rebuilds the same types and errors.As finds them
// there too; a cause of another type travels as its message.

// causeKinds makes an empty cause of each kind, to decode into.
var causeKinds = map[string]func() error{
	"LocalTerminationTimeout":      func() error { return new(LocalTerminationTimeout) },
	"RemoteTerminationUnconfirmed": func() error { return new(RemoteTerminationUnconfirmed) },
	"RemoteForced":                 func() error { return new(RemoteForced) },
}

// CauseKind names the type of a stop's cause (LocalTerminationTimeout,
// RemoteTerminationUnconfirmed, RemoteForced), or is empty for another
// error.
func CauseKind(err error) string {
	switch err.(type) {
	case *LocalTerminationTimeout:
		return "LocalTerminationTimeout"
	case *RemoteTerminationUnconfirmed:
		return "RemoteTerminationUnconfirmed"
	case *RemoteForced:
		return "RemoteForced"
	}
	return ""
}

type wireCleanup struct {
	Plugin  string      `json:"plugin"`
	Outcome Outcome     `json:"outcome"`
	Causes  []wireCause `json:"causes"`
}

type wireCause struct {
	// Kind names the cause's type; empty for an error known only by its
	// message.
	Kind    string          `json:"kind,omitempty"`
	Message string          `json:"message"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// MarshalJSON writes the error with its causes, each with its kind.
func (e *CleanupError) MarshalJSON() ([]byte, error) {
	w := wireCleanup{Plugin: e.Plugin, Outcome: e.Outcome, Causes: []wireCause{}}
	for _, c := range e.Causes.WrappedErrors() {
		wc := wireCause{Kind: CauseKind(c), Message: c.Error()}
		if wc.Kind != "" {
			d, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			wc.Detail = d
		}
		w.Causes = append(w.Causes, wc)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON wrote, giving each cause of a known
// kind its type back.
func (e *CleanupError) UnmarshalJSON(b []byte) error {
	var w wireCleanup
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = CleanupError{Plugin: w.Plugin, Outcome: w.Outcome, Causes: &multierror.Error{}}
	for _, wc := range w.Causes {
		var cause error = &wireMessage{wc.Message}
		if mk := causeKinds[wc.Kind]; mk != nil && len(wc.Detail) > 0 {
			c := mk()
			if err := json.Unmarshal(wc.Detail, c); err != nil {
				return fmt.Errorf("cause %s: %w", wc.Kind, err)
			}
			cause = c
		}
		e.Causes = multierror.Append(e.Causes, cause)
	}
	return nil
}

// MarshalJSON writes the error, its cause as a message.
func (e *RemoteTerminationUnconfirmed) MarshalJSON() ([]byte, error) {
	type plain RemoteTerminationUnconfirmed
	cause := ""
	if e.Cause != nil {
		cause = e.Cause.Error()
	}
	return json.Marshal(struct {
		*plain
		Cause string `json:"cause,omitempty"`
	}{(*plain)(e), cause})
}

// UnmarshalJSON reads what MarshalJSON wrote; the cause comes back as an
// error with its message.
func (e *RemoteTerminationUnconfirmed) UnmarshalJSON(b []byte) error {
	type plain RemoteTerminationUnconfirmed
	w := struct {
		*plain
		Cause string `json:"cause,omitempty"`
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Cause != "" {
		e.Cause = errors.New(w.Cause)
	}
	return nil
}

// wireMessage is a cause that crossed the wire as its message alone.
type wireMessage struct{ msg string }

func (e *wireMessage) Error() string { return e.msg }
