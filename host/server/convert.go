package server

import (
	"encoding/json"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
)

// The host's events and steps in the API's types (hostapi), whose JSON
// they keep field for field.

// eventOf is e as the API carries it.
func eventOf(e apply.Event) hostapi.Event {
	return hostapi.Event{
		Step:  stepOf(e.Step),
		Phase: string(e.Phase),
		Result: hostapi.Result{
			Outcome:  string(e.Result.Outcome),
			Identity: hostapi.Identity{ID: e.Result.Identity.ID, Generation: e.Result.Identity.Generation},
			PID:      e.Result.PID,
			Cleanup:  cleanupOf(e.Result.Cleanup),
		},
		Error: e.Error,
		Took:  e.Took,
		At:    e.At,
	}
}

// stepOf is s as the API carries it: the steps it waits on in the plan's
// own JSON (docs/plan-format.md, "Steps").
func stepOf(s plan.Step) hostapi.Step {
	after, _ := json.Marshal(s.After) // edges always marshal
	return hostapi.Step{ID: s.ID, Op: string(s.Op), Plugin: s.Plugin, After: after}
}

// cleanupOf is a forced stop's error as the API carries it: its JSON
// (runtime.CleanupError's own, each cause with its kind), read into the
// API's type; nil for none.
func cleanupOf(c *runtime.CleanupError) *hostapi.Cleanup {
	if c == nil {
		return nil
	}
	b, err := json.Marshal(c)
	var out hostapi.Cleanup
	if err != nil || json.Unmarshal(b, &out) != nil {
		return &hostapi.Cleanup{Plugin: c.Plugin, Outcome: string(c.Outcome), Causes: []hostapi.StopCause{{Message: c.Error()}}}
	}
	return &out
}
