package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graftland/graft/spec"
)

// Edge is one entry of a step's After: the step it waits on and, for the
// start of a provider that a consumer's uses entry gives a condition
// other than ready, that condition (docs/plan-format.md, "Steps"). An
// edge without one waits for the step to succeed: for a start, its plugin
// ready (a one-shot's: completed).
type Edge struct {
	Step  string         `json:"step"`
	Until spec.Condition `json:"until,omitempty"`
}

// MarshalJSON writes an edge without a condition as its step's id, as
// plans before conditions had it, and one with a condition as
// {"step": ID, "until": CONDITION}.
func (e Edge) MarshalJSON() ([]byte, error) {
	if e.Until == "" {
		return json.Marshal(e.Step)
	}
	type plain Edge
	return json.Marshal(plain(e))
}

// UnmarshalJSON reads either form MarshalJSON writes.
func (e *Edge) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		*e = Edge{}
		return json.Unmarshal(b, &e.Step)
	}
	type plain Edge
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("after entry: %w", err)
	}
	*e = Edge(p)
	return nil
}

// String is the edge for messages: "start:db", or "start:migrate until
// completed".
func (e Edge) String() string {
	if e.Until == "" {
		return e.Step
	}
	return e.Step + " until " + string(e.Until)
}

// conditions describes the conditioned edges of s for the text plan:
// " (migrate completed, db healthy)", or "" when it has none.
func (s Step) conditions() string {
	var parts []string
	for _, a := range s.After {
		if a.Until != "" {
			_, plugin, _ := strings.Cut(a.Step, ":")
			parts = append(parts, plugin+" "+string(a.Until))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (once " + strings.Join(parts, ", ") + ")"
}

// After is the edges of a step that waits on each of ids to succeed,
// without conditions.
func After(ids ...string) []Edge {
	out := make([]Edge, len(ids))
	for i, id := range ids {
		out[i] = Edge{Step: id}
	}
	return out
}
