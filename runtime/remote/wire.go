package remote

import (
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// The runner's API carries how a process ended as its own types
// (runnerapi); a placement reports them as runtime's, converted here.

// exitOf is e, as the runner's API carried it, as a placement reports it.
func exitOf(e runnerapi.Exit) runtime.Exit {
	return runtime.Exit{Code: e.Code, Signal: e.Signal, Error: e.Error, Requested: e.Requested, Lost: e.Lost,
		Outcome: runtime.Outcome(e.Outcome), Tail: e.Tail, At: e.At}
}
