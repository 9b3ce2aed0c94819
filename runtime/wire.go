package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/internal/errkind"
)

// The errors of a stop cross the host's API (an apply's events and
// failures) as JSON. Each cause carries its kind (internal/errkind), so
// that the far side rebuilds the same types and errors.As finds them
// there too; a cause of another type travels as its message.

// The kinds of a stop's errors and its causes, and of a failed start.
var (
	_ = errkind.Type("cleanup", http.StatusInternalServerError, (*CleanupError)(nil), true)
	_ = errkind.Type("start", http.StatusInternalServerError, (*StartError)(nil), true)
	_ = errkind.Type("LocalTerminationTimeout", http.StatusInternalServerError, (*LocalTerminationTimeout)(nil), true)
	_ = errkind.Type("RemoteTerminationUnconfirmed", http.StatusInternalServerError, (*RemoteTerminationUnconfirmed)(nil), true)
	_ = errkind.Type("RemoteForced", http.StatusInternalServerError, (*RemoteForced)(nil), true)
)

// CauseKind names the type of a stop's cause (LocalTerminationTimeout,
// RemoteTerminationUnconfirmed, RemoteForced), or is empty for another
// error.
func CauseKind(err error) string {
	if k := errkind.Exact(err); k != nil {
		return k.Name
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
		wc := wireCause{Message: c.Error()}
		if k := errkind.Exact(c); k != nil {
			d, err := k.Detail(c)
			if err != nil {
				return nil, err
			}
			wc.Kind, wc.Detail = k.Name, d
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
		if k := errkind.Lookup(wc.Kind); k != nil && len(wc.Detail) > 0 {
			c := k.New(wc.Detail)
			if c == nil {
				return fmt.Errorf("cause %s: its detail does not decode", wc.Kind)
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
