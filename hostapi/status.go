package hostapi

import (
	"encoding/json"
	"time"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// Status is the host's report of itself and of what it runs: the answer
// of GET /v1/status, and what `graft status --json` prints. A plan reads
// only part of it (State); plan.ReadState reads that part of a saved one.
type Status struct {
	Host    *HostInfo      `json:"host,omitempty"`
	Plugins []PluginStatus `json:"plugins"`
}

// HostInfo describes the host daemon that reported a Status.
type HostInfo struct {
	PID      int       `json:"pid"`
	Version  string    `json:"version,omitempty"`
	Project  string    `json:"project,omitempty"`
	StateDir string    `json:"stateDir,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	// Spec is the digest of the last applied spec.
	Spec string `json:"spec,omitempty"`
	// Applying says who is applying, while an apply is under way.
	Applying string `json:"applying,omitempty"`
}

// PluginStatus is one plugin the host runs or tracks: the record a plan
// reads, and the facts of its process, which no plan reads.
type PluginStatus struct {
	plan.Record
	// Instance and Generation identify the plugin's process.
	Instance   string    `json:"instance"`
	Generation int64     `json:"generation"`
	PID        int       `json:"pid"`
	Since      time.Time `json:"since,omitzero"`
	Restarts   int       `json:"restarts"`
	// Role is a floating plugin's part in its election: leader,
	// follower or candidate.
	Role string `json:"role,omitempty"`
	// Address is where a floating plugin's leader serves.
	Address string `json:"address,omitempty"`
	// Health is the verdict of its health check (starting, healthy,
	// unhealthy); empty without one.
	Health string `json:"health,omitempty"`
	// HealthError is the error of its last failed health check.
	HealthError string `json:"healthError,omitempty"`
	// Backend is where a floating plugin's election runs: file (a lease
	// file in a shared directory) or etcd.
	Backend string `json:"backend,omitempty"`
	// LastStop is how the plugin's last stop ended, when it has been
	// stopped (a restart, a replacement).
	LastStop *LastStop `json:"lastStop,omitempty"`
}

// LastStop is how a stop ended: its outcome (Exited, Killed or
// RemoteTerminationUnconfirmed) and, when it had to force the plugin or
// could not confirm its end, the causes (docs/stopping.md).
type LastStop struct {
	Outcome string      `json:"outcome"`
	Causes  []StopCause `json:"causes,omitempty"`
	At      time.Time   `json:"at"`
}

// StopCause is one cause of a forced or unconfirmed stop.
type StopCause struct {
	// Kind names its type, such as LocalTerminationTimeout; empty for
	// another error.
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

// State is the part of s that a plan reads: the input of plan.Diff, and
// what a saved plan's state digest covers. Its records share their Uses
// and Fields with s.
func (s *Status) State() *plan.State {
	st := &plan.State{Plugins: make([]plan.Record, len(s.Plugins))}
	for i, p := range s.Plugins {
		st.Plugins[i] = p.Record
	}
	return st
}

// pluginJSON is a PluginStatus as JSON: the record's fields and the
// process's, in the order graft status --json has always printed them.
type pluginJSON struct {
	Name       string            `json:"name"`
	Run        spec.Placement    `json:"run"`
	Status     plan.Status       `json:"status"`
	Instance   string            `json:"instance"`
	Generation int64             `json:"generation"`
	PID        int               `json:"pid"`
	Since      time.Time         `json:"since,omitzero"`
	Restarts   int               `json:"restarts"`
	LastError  string            `json:"lastError,omitempty"`
	Role       string            `json:"role,omitempty"`
	Address    string            `json:"address,omitempty"`
	Health     string            `json:"health,omitempty"`
	HealthErr  string            `json:"healthError,omitempty"`
	Backend    string            `json:"backend,omitempty"`
	Hash       string            `json:"hash"`
	Uses       []string          `json:"uses,omitempty"`
	Fields     map[string]string `json:"fields,omitempty"`
	KeyID      string            `json:"keyID,omitempty"`
	Runner     string            `json:"runner,omitempty"`
	LastStop   *LastStop         `json:"lastStop,omitempty"`
}

// MarshalJSON writes p with the record's fields and the process's
// interleaved, as they were before the two were apart. Reading needs no
// method: encoding/json fills the embedded record by its fields' names.
func (p PluginStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(pluginJSON{
		Name:       p.Name,
		Run:        p.Run,
		Status:     p.Status,
		Instance:   p.Instance,
		Generation: p.Generation,
		PID:        p.PID,
		Since:      p.Since,
		Restarts:   p.Restarts,
		LastError:  p.LastError,
		Role:       p.Role,
		Address:    p.Address,
		Health:     p.Health,
		HealthErr:  p.HealthError,
		Backend:    p.Backend,
		Hash:       p.Hash,
		Uses:       p.Uses,
		Fields:     p.Fields,
		KeyID:      p.KeyID,
		Runner:     p.Runner,
		LastStop:   p.LastStop,
	})
}
