package bench

import (
	"maps"
	"slices"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// State is the running state of s applied whole, every plugin running.
func State(s *spec.Spec) *plan.State {
	st := &plan.State{}
	for i, name := range slices.Sorted(maps.Keys(s.Plugins)) {
		r := plan.Applied(s, name)
		r.Status, r.Generation, r.PID = plan.Running, 1, 10000+i
		st.Plugins = append(st.Plugins, r)
	}
	return st
}
