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
	for i, r := range State(s).Plugins {
		st.Plugins = append(st.Plugins, hostapi.PluginStatus{Name: r.Name, Run: string(r.Run), Status: string(r.Status),
			Instance: s.Plugins[r.Name].Instance, Generation: 1, PID: 10000 + i,
			Hash: r.Hash, Uses: r.Uses, Fields: r.Fields, KeyID: r.KeyID, Runner: r.Runner})
	}
	return st
}

// State is the running state of s applied whole, as plan.Diff reads it:
// every plugin running.
func State(s *spec.Spec) *plan.State {
	st := &plan.State{}
	for _, name := range slices.Sorted(maps.Keys(s.Plugins)) {
		r := plan.Applied(s, name)
		r.Status = plan.Running
		st.Plugins = append(st.Plugins, r)
	}
	return st
}
