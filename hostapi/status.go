package hostapi

import (
	"encoding/json"
	"time"
)

// StatusFormat names the form of a Status, as its Format
// (docs/status-format.md). A change that a reader of an earlier form
// would misread gets a new name; fields are added within a form.
const StatusFormat = "graft.status/v1"

// Status is the host's report of itself and of what it runs: the answer
// of GET /v1/status, and what `graft status --json` prints
// (docs/status-format.md). A plan reads only part of each plugin's
// (plan.ReadState reads that part of a saved one).
type Status struct {
	// Format is StatusFormat, in every status a host reports.
	Format  string         `json:"format,omitempty"`
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
// reads (name, run, status, lastError, hash, uses, fields, keyID,
// runner: plan.Record, which plan.ReadState reads of a saved status), and
// the facts of its process, which no plan reads.
type PluginStatus struct {
	Name string `json:"name"`
	// Run is its placement: local, worker, runner or floating.
	Run string `json:"run"`
	// Status is where it stands (docs/plan-format.md, "Changes").
	Status string `json:"status"`
	// Instance and Generation identify the plugin's process.
	Instance   string    `json:"instance"`
	Generation int64     `json:"generation"`
	PID        int       `json:"pid"`
	Since      time.Time `json:"since,omitzero"`
	Restarts   int       `json:"restarts"`
	// LastError is why it last failed.
	LastError string `json:"lastError,omitempty"`
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
	// Hash, Uses, Fields and KeyID are what its spec decided when it was
	// applied: its canonical hash, the plugins it uses, the digests of its
	// fields and the key they were made under.
	Hash   string            `json:"hash"`
	Uses   []string          `json:"uses,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`
	KeyID  string            `json:"keyID,omitempty"`
	// Runner is the runner a runner plugin runs on, as the spec names it.
	Runner string `json:"runner,omitempty"`
	// SocketKey and Sockets are its held sockets (plan.Record's).
	SocketKey string   `json:"socketKey,omitempty"`
	Sockets   []string `json:"sockets,omitempty"`
	// LastStop is how the plugin's last stop ended, when it has been
	// stopped (a restart, a replacement).
	LastStop *LastStop `json:"lastStop,omitempty"`
	// Adopted is set when its process is one an earlier host started,
	// which this one adopted (docs/upgrade.md).
	Adopted *Adopted `json:"adopted,omitempty"`
}

// Adopted is when a host adopted a process an earlier host started, and
// since when no host had watched it: the earlier host's end (an upgrade's
// exec, or a crash).
type Adopted struct {
	At       time.Time `json:"at"`
	HostGone time.Time `json:"hostGone"`
	// GapMillis is the time between the two, in milliseconds.
	GapMillis int64 `json:"gapMillis"`
}

// LastStop is how a stop ended: its outcome (Exited, Killed or
// RemoteTerminationUnconfirmed) and, when it had to force the plugin or
// could not confirm its end, the causes (docs/stopping.md).
type LastStop struct {
	Outcome string      `json:"outcome"`
	Causes  []StopCause `json:"causes,omitempty"`
	// At is when the stop ended.
	At time.Time `json:"at"`
	// TookMillis is how long the stop took, in milliseconds: from the
	// stop signal to the confirmed end (or to giving up on it).
	TookMillis int64 `json:"tookMillis"`
}

// StopCause is one cause of a forced or unconfirmed stop.
type StopCause struct {
	// Kind names its type, such as LocalTerminationTimeout; empty for
	// another error.
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
	// Detail holds the fields of its type, in a forced stop's Cleanup.
	Detail json.RawMessage `json:"detail,omitempty"`
}
