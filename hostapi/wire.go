// Package hostapi is the host's control API as its clients see it: the
// requests, answers and events that cross it, the errors that cross it
// with their types (docs/stopping.md), and the Go client.
//
// The control API is HTTP and JSON over the host's unix socket (and its
// optional TCP listener); it is versioned by path (/v1/...). Applies
// answer with a stream of Messages, one JSON object a line, so the CLI
// shows progress as it happens.
package hostapi

import (
	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/plan"
)

// MaxBody bounds a request body (a spec, or a saved plan with its spec),
// an answer that is one JSON value, and a line of an apply's stream.
const MaxBody = 32 << 20

// MaxLogLines bounds the lines a request for a plugin's log gets from its
// end.
const MaxLogLines = 1 << 20

// ApplyRequest asks the host to bring about a spec.
type ApplyRequest struct {
	// Source is the desired spec.
	Source plan.Source `json:"source"`
	// Plan, when set, is a saved plan to carry out exactly; the host
	// refuses it if the running state changed since it was made.
	Plan *plan.Plan `json:"plan,omitempty"`
	// Restart names plugins to replace though unchanged (graft restart);
	// their consumers restart as for any replacement.
	Restart []string `json:"restart,omitempty"`
	// Once, with Restart, asks that each plugin named be a one-shot
	// (graft run): it runs again, planned like a restart.
	Once bool `json:"once,omitempty"`
	// Parallelism bounds the steps running at once; 0 is the default, 10.
	Parallelism int `json:"parallelism,omitempty"`
	// LockWait is how long to wait for an apply under way to finish, in
	// milliseconds; 0 fails at once.
	LockWait int64 `json:"lockWait,omitempty"`
	// Holder says who applies, for whoever finds the apply lock held.
	Holder string `json:"holder,omitempty"`
}

// MessageType says what a Message carries.
type MessageType string

// The messages of an apply's stream.
const (
	MsgPlan  MessageType = "plan"  // the plan being carried out
	MsgEvent MessageType = "event" // a step's progress
	MsgDone  MessageType = "done"  // the end, with every error
)

// Message is one line of an apply's stream.
type Message struct {
	Type  MessageType  `json:"type"`
	Plan  *plan.Plan   `json:"plan,omitempty"`
	Event *apply.Event `json:"event,omitempty"`
	// Errors are the apply's errors, on MsgDone, as text.
	Errors []string `json:"errors,omitempty"`
	// Failures are the same errors with their kinds, so the client gives
	// each its type back (errors.As finds a *runtime.CleanupError, a
	// *runtime.StartError, ...).
	Failures []ErrorBody `json:"failures,omitempty"`
}

// LeaderInfo answers GET /v1/leader/{plugin}: a floating plugin's lease,
// as this host sees it.
type LeaderInfo struct {
	Plugin   string `json:"plugin"`
	Instance string `json:"instance"`
	// Backend is where the election runs: "file" (a lease file in Dir) or
	// "etcd" (the candidates' keys under Key, on Endpoints).
	Backend string `json:"backend,omitempty"`
	// Dir is the election's directory, on the file backend.
	Dir string `json:"dir,omitempty"`
	// Endpoints and Key: the etcd servers, and the prefix of the
	// candidates' keys.
	Endpoints []string `json:"endpoints,omitempty"`
	Key       string   `json:"key,omitempty"`
	// Holder, Address, Epoch, RenewCount and Released are the lease's.
	Holder     string `json:"holder"`
	Address    string `json:"address"`
	Epoch      int64  `json:"epoch"`
	RenewCount int64  `json:"renewCount"`
	Released   bool   `json:"released"`
	// AgeMillis is how long the lease file has looked unchanged to this
	// host, on its own clock; TTLMillis is how long the leader may go
	// without renewing it.
	AgeMillis int64 `json:"ageMillis"`
	TTLMillis int64 `json:"ttlMillis"`
	// Role is this host's part: leader, follower or candidate.
	Role string `json:"role"`
	// HostID is this host's id in the election.
	HostID string `json:"hostID"`
}

// PlanRequest asks the host for the plan of a spec against what it runs:
// POST /v1/plan, which graft plan uses when a host runs. The host makes
// it, since only it holds the digest key that the running state's digests
// of env values are keyed with.
type PlanRequest struct {
	// Source is the desired spec.
	Source plan.Source `json:"source"`
}
