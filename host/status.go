package host

import (
	"maps"
	"os"
	"slices"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
)

// Status is the host's report of itself and of what it runs, as graft
// status reads it; its State is what plan.Diff reads.
func (h *Host) Status() *hostapi.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &hostapi.Status{
		Format: hostapi.StatusFormat,
		Host: &hostapi.HostInfo{
			PID:      os.Getpid(),
			Version:  h.opt.Version,
			StateDir: h.dir,
			Since:    h.started,
			Applying: h.holder.who,
		},
		Plugins: []hostapi.PluginStatus{},
	}
	if h.spec != nil {
		st.Host.Spec = h.spec.Digest
		if h.spec.parsed != nil {
			st.Host.Project = h.spec.parsed.Name
		}
	}
	for _, name := range slices.Sorted(maps.Keys(h.plugins)) {
		e := h.plugins[name]
		rec := e.record
		r := hostapi.PluginStatus{Name: rec.Name, Run: string(rec.Run), Hash: rec.Hash, Uses: rec.Uses, Fields: rec.Fields, KeyID: rec.KeyID, Runner: rec.Runner,
			SocketKey: rec.SocketKey, Sockets: rec.Sockets}
		s := e.supervisor.State()
		r.Status = string(statusOf(s.Status))
		r.Role, r.Address, r.Backend = s.Role, s.Address, s.Backend
		r.Health, r.HealthError = string(s.Health), s.HealthError
		r.Instance = s.Identity.ID
		r.Generation = s.Identity.Generation
		r.PID = s.PID
		r.Since = s.Since
		r.Restarts = s.Restarts
		r.LastError = s.LastError
		r.LastStop = h.lastStops[name]
		r.Adopted = e.adopted
		st.Plugins = append(st.Plugins, r)
	}
	return st
}

// State is what runs, as a plan reads it (plan.State): each plugin's
// record as its spec decided it, with its status and last error now.
func (h *Host) State() *plan.State {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &plan.State{Plugins: make([]plan.Record, 0, len(h.plugins))}
	for _, name := range slices.Sorted(maps.Keys(h.plugins)) {
		e := h.plugins[name]
		r := e.record
		s := e.supervisor.State()
		r.Status, r.LastError = statusOf(s.Status), s.LastError
		st.Plugins = append(st.Plugins, r)
	}
	return st
}

func statusOf(s runtime.Status) plan.Status {
	switch s {
	case runtime.Starting:
		return plan.Starting
	case runtime.Running:
		return plan.Running
	case runtime.Failed:
		return plan.Failed
	case runtime.Standby:
		return plan.Standby
	case runtime.StopUnconfirmed:
		return plan.Unconfirmed
	case runtime.Completed:
		return plan.Completed
	}
	return plan.Stopping // stopping, or stopped and about to be forgotten
}
