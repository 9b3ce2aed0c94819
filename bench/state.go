package bench

import (
	"maps"
	"slices"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// Status is what a host that applied s whole reports, every plugin
// running: what graft status --json would save for graft plan --state.
func Status(s *spec.Spec) *hostapi.Status {
	st := &hostapi.Status{}
	for i, name := range slices.Sorted(maps.Keys(s.Plugins)) {
		r := hostapi.PluginStatus{Record: plan.Applied(s, name), Instance: s.Plugins[name].Instance}
		r.Status, r.Generation, r.PID = plan.Running, 1, 10000+i
		st.Plugins = append(st.Plugins, r)
	}
	return st
}

// State is the running state of s applied whole, as plan.Diff reads it.
func State(s *spec.Spec) *plan.State { return Status(s).State() }
