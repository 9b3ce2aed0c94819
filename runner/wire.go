package runner

import (
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// The runner's processes end as runtime says (runtime.Exit); its API
// carries that as its own types (runnerapi), converted here.

// wireExit is e as the runner's API carries it.
func wireExit(e runtime.Exit) runnerapi.Exit {
	return runnerapi.Exit{Code: e.Code, Signal: e.Signal, Error: e.Error, Requested: e.Requested, Lost: e.Lost,
		Outcome: runnerapi.Outcome(e.Outcome), Tail: e.Tail, At: e.At}
}
